"""tf.app: flags and run(main, argv), which parses the flags and exits with main's result."""
import sys

from . import flags  # noqa: F401 -- tf.app.flags


def run(main=None, argv=None):
    """Parses argv (default sys.argv) into flags.FLAGS, then sys.exit(main(remaining args))."""
    args = sys.argv if argv is None else argv
    try:
        remaining = flags.FLAGS(args, known_only=False)
    except flags.Error as e:
        sys.stderr.write("FATAL Flags parsing error: %s\n"
                         "Pass --helpshort or --helpfull to see help on flags.\n" % e)
        sys.exit(1)
    if main is None:
        main = sys.modules["__main__"].main
    sys.exit(main(remaining))
