"""tf.app.flags (also tf.flags): DEFINE_string/integer/float/boolean and FLAGS, parsed as absl
parses them -- `--name=value`, `--name value`, bare `--flag` / `--noflag` for booleans, `--` ending
the flags -- from sys.argv on first use, or by tf.app.run."""
import sys


class Error(Exception):
    pass


class UnrecognizedFlagError(Error):
    pass


class IllegalFlagValueError(Error):
    pass


class DuplicateFlagError(Error):
    pass


def _parse_bool(text):
    t = text.lower()
    if t in ("true", "t", "1", "yes", "y"):
        return True
    if t in ("false", "f", "0", "no", "n"):
        return False
    raise ValueError("Non-boolean argument to boolean flag")


def _parse_int(text):
    return int(text, 0) if isinstance(text, str) else int(text)


class _Flag:
    def __init__(self, name, default, help_text, parse, kind):
        self.name, self.default, self.help, self.parse, self.kind = (name, default, help_text,
                                                                      parse, kind)
        self.value = default
        self.present = False


class FlagValues:
    def __init__(self):
        object.__setattr__(self, "_flags", {})
        object.__setattr__(self, "_parsed", False)

    def _define(self, name, default, help_text, parse, kind):
        if name in self._flags:
            raise DuplicateFlagError("The flag '%s' is defined twice." % name)
        f = _Flag(name, default, help_text, parse, kind)
        if default is not None and isinstance(default, str) and kind != "string":
            f.value = f.default = parse(default)
        self._flags[name] = f

    def is_parsed(self):
        return self._parsed

    def mark_as_parsed(self):
        object.__setattr__(self, "_parsed", True)

    def __contains__(self, name):
        return name in self._flags

    def __getattr__(self, name):
        flags = object.__getattribute__(self, "_flags")
        if name not in flags:
            raise AttributeError(name)
        if not self._parsed:
            self(sys.argv, known_only=True)
        return flags[name].value

    def __setattr__(self, name, value):
        if name not in self._flags:
            raise AttributeError("flag --%s is not defined" % name)
        self._flags[name].value = value

    def flag_values_dict(self):
        return {n: f.value for n, f in self._flags.items()}

    def _set(self, f, text):
        try:
            f.value = f.parse(text)
        except (ValueError, TypeError) as e:
            raise IllegalFlagValueError("flag --%s=%s: %s" % (f.name, text, e)) from None
        f.present = True

    def __call__(self, argv, known_only=False):
        """Parses argv[1:]; returns argv[0] and the arguments that are not flags."""
        argv = list(argv)
        rest = argv[:1]
        i = 1
        while i < len(argv):
            arg = argv[i]
            i += 1
            if arg == "--":
                rest.extend(argv[i:])
                break
            if not arg.startswith("-") or arg == "-":
                rest.append(arg)
                continue
            body = arg.lstrip("-")
            name, eq, value = body.partition("=")
            f = self._flags.get(name)
            if f is None and not eq and name.startswith("no") and \
                    self._flags.get(name[2:]) is not None and \
                    self._flags[name[2:]].kind == "bool":
                self._flags[name[2:]].value = False
                self._flags[name[2:]].present = True
                continue
            if f is None:
                if known_only:
                    rest.append(arg)
                    continue
                raise UnrecognizedFlagError("Unknown command line flag '%s'" % name)
            if eq:
                self._set(f, value)
            elif f.kind == "bool":
                f.value, f.present = True, True
            elif i < len(argv):
                self._set(f, argv[i])
                i += 1
            else:
                raise IllegalFlagValueError("Flag --%s must have a value other than None."
                                            % name)
        self.mark_as_parsed()
        return rest


FLAGS = FlagValues()


def DEFINE_string(name, default, help=None, flag_values=FLAGS, **kwargs):  # noqa: N802,A002
    flag_values._define(name, default, help, str, "string")


def DEFINE_integer(name, default, help=None, lower_bound=None, upper_bound=None,  # noqa: N802
                   flag_values=FLAGS, **kwargs):
    def parse(text):
        v = _parse_int(text)
        if (lower_bound is not None and v < lower_bound) or \
                (upper_bound is not None and v > upper_bound):
            raise ValueError("%d is not in [%s, %s]" % (v, lower_bound, upper_bound))
        return v
    flag_values._define(name, default, help, parse, "int")


def DEFINE_float(name, default, help=None, lower_bound=None, upper_bound=None,  # noqa: N802
                 flag_values=FLAGS, **kwargs):
    flag_values._define(name, default, help, float, "float")


def DEFINE_boolean(name, default, help=None, flag_values=FLAGS, **kwargs):  # noqa: N802,A002
    flag_values._define(name, default, help,
                        lambda t: t if isinstance(t, bool) else _parse_bool(t), "bool")


DEFINE_bool = DEFINE_boolean


def DEFINE_list(name, default, help=None, flag_values=FLAGS, **kwargs):  # noqa: N802,A002
    flag_values._define(name, default, help,
                        lambda t: t if isinstance(t, list) else [s for s in t.split(",") if s],
                        "list")
