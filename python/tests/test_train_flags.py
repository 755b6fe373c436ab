"""tf.app.flags and tf.app.run as TF 1.x programs use them: `--flag=value`, `--flag value`, bare
`--flag` / `--noflag` for booleans, `--` ending the flags, main's result as the exit status,
and the errors of bad command lines."""
import textwrap

import pytest

from weft.compat.v1 import flags as flags_mod
from _procs import Children

PROGRAM = textwrap.dedent("""
    import sys
    import weft.compat.v1 as tf
    flags = tf.app.flags
    flags.DEFINE_string("job_name", "", "ps or worker")
    flags.DEFINE_integer("task_index", 0, "task")
    flags.DEFINE_float("learning_rate", 0.01, "lr")
    flags.DEFINE_boolean("sync", False, "synchronous")
    flags.DEFINE_boolean("log", True, "log")
    FLAGS = flags.FLAGS

    def main(argv):
        print(repr((FLAGS.job_name, FLAGS.task_index, FLAGS.learning_rate, FLAGS.sync,
                    FLAGS.log, argv[1:])))
        return FLAGS.task_index

    if __name__ == "__main__":
        tf.app.run()
""")


def run(args):
    c = Children()
    try:
        return c.finish(c.start(["-c", PROGRAM] + args), timeout=120)
    finally:
        c.kill_all()


def test_forms_of_flags():
    rc, out, err = run(["--job_name=worker", "--task_index", "3", "--learning_rate=0.5",
                        "--sync", "--nolog", "rest", "--", "--job_name=x"])
    assert rc == 3, err
    assert out.strip() == repr(("worker", 3, 0.5, True, False, ["rest", "--job_name=x"]))
    rc, out, err = run(["-sync=false", "-log=true"])
    assert (rc, out.strip()) == (0, repr(("", 0, 0.01, False, True, [])))


def test_bad_command_lines():
    rc, out, err = run(["--unknown=1"])
    assert rc == 1
    assert err == ("FATAL Flags parsing error: Unknown command line flag 'unknown'\n"
                   "Pass --helpshort or --helpfull to see help on flags.\n")
    rc, out, err = run(["--task_index=abc"])
    assert rc == 1
    assert err.splitlines()[0] == ("FATAL Flags parsing error: flag --task_index=abc: invalid "
                                   "literal for int() with base 0: 'abc'")
    rc, out, err = run(["--job_name"])
    assert err.splitlines()[0] == ("FATAL Flags parsing error: Flag --job_name must have a "
                                   "value other than None.")


def test_flag_values_in_process():
    fv = flags_mod.FlagValues()
    flags_mod.DEFINE_integer("n", 5, "n", flag_values=fv)
    flags_mod.DEFINE_boolean("b", True, "b", flag_values=fv)
    assert fv(["prog", "--n=0x10", "--nob", "x"]) == ["prog", "x"]
    assert (fv.n, fv.b) == (16, False)
    with pytest.raises(flags_mod.DuplicateFlagError) as e:
        flags_mod.DEFINE_integer("n", 1, "again", flag_values=fv)
    assert str(e.value) == "The flag 'n' is defined twice."
    with pytest.raises(flags_mod.IllegalFlagValueError) as e:
        fv(["prog", "--b=maybe"])
    assert str(e.value) == "flag --b=maybe: Non-boolean argument to boolean flag"
    fv.n = 7
    assert fv.flag_values_dict() == {"n": 7, "b": False}
