"""tf.gfile (and tf.io.gfile's lowercase names): TensorFlow 1.x's file API over the local file
system, with os, shutil and glob. A path with a scheme other than file:// (gs://, hdfs://, s3://)
raises UnimplementedError as TensorFlow does for a file system it was built without; failures
raise the tf.errors classes TensorFlow raises (NotFoundError, AlreadyExistsError, ...)."""
import errno as _errno
import glob as _glob
import os as _os
import re as _re
import shutil as _shutil

from weft import errors as _errors

_SCHEME = _re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def _local(path):
    """The local path of `path` (str or bytes, file:// accepted)."""
    if isinstance(path, bytes):
        path = path.decode()
    path = _os.fspath(path)
    m = _SCHEME.match(path)
    if m:
        if m.group(1) != "file":
            raise _errors.UnimplementedError(
                None, None, "File system scheme '%s' not implemented (file: '%s')"
                % (m.group(1), path))
        path = path[len("file://"):]
    return path


def _raise(e, path):
    """Re-raises an OSError as the tf.errors class TensorFlow's file system would give."""
    cls = {_errno.ENOENT: _errors.NotFoundError, _errno.ENOTDIR: _errors.NotFoundError,
           _errno.EEXIST: _errors.AlreadyExistsError, _errno.EACCES: _errors.PermissionDeniedError,
           _errno.EPERM: _errors.PermissionDeniedError,
           _errno.ENOTEMPTY: _errors.FailedPreconditionError,
           _errno.EISDIR: _errors.FailedPreconditionError}.get(e.errno, _errors.UnknownError)
    raise cls(None, None, "%s; %s" % (path, e.strerror)) from None


class GFile:
    """A file, opened on first use as TensorFlow's GFile is: read() gives str in "r" mode and
    bytes in "rb"; a missing file raises NotFoundError at the first read."""

    def __init__(self, name, mode="r"):
        if mode.strip("rwab+") or not mode:
            raise _errors.InvalidArgumentError(None, None, "mode is not 'r' or 'w' or 'a' or "
                                                           "'rb' or 'wb' or 'ab'")
        self.__name = name
        self.__path = _local(name)
        self.__mode = mode
        self.__f = None

    @property
    def name(self):
        return self.__name

    @property
    def mode(self):
        return self.__mode

    def _file(self):
        if self.__f is None:
            try:
                # newline="" so that text mode hands lines back as written, as TensorFlow does
                self.__f = open(self.__path, self.__mode, **(
                    {} if "b" in self.__mode else {"encoding": "utf-8", "newline": ""}))
            except OSError as e:
                _raise(e, self.__path)
        return self.__f

    def size(self):
        return stat(self.__path).length

    def read(self, n=-1):
        return self._file().read(n)

    def readline(self):
        return self._file().readline()

    def readlines(self):
        return self._file().readlines()

    def write(self, file_content):
        f = self._file()
        if "b" in self.__mode and isinstance(file_content, str):
            file_content = file_content.encode()
        elif "b" not in self.__mode and isinstance(file_content, (bytes, bytearray)):
            file_content = bytes(file_content).decode()
        f.write(file_content)

    def seek(self, offset=None, whence=0, position=None):
        if position is not None:
            offset = position
        self._file().seek(offset, whence)

    def tell(self):
        return self._file().tell()

    def flush(self):
        if self.__f is not None:
            self.__f.flush()

    def close(self):
        if self.__f is not None:
            self.__f.close()
            self.__f = None

    def __iter__(self):
        return self

    def __next__(self):
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    next = __next__

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


Open = GFile
FastGFile = GFile


class FileStatistics:
    """What stat() returns: length in bytes, mtime_nsec, is_directory."""

    def __init__(self, length, mtime_nsec, is_directory):
        self.length = length
        self.mtime_nsec = mtime_nsec
        self.is_directory = is_directory


def exists(path):
    return _os.path.exists(_local(path))


def isdir(path):
    return _os.path.isdir(_local(path))


def makedirs(path):
    p = _local(path)
    try:
        _os.makedirs(p, exist_ok=True)
    except OSError as e:
        _raise(e, p)


def mkdir(path):
    p = _local(path)
    try:
        _os.mkdir(p)
    except OSError as e:
        _raise(e, p)


def listdir(path):
    p = _local(path)
    if not _os.path.isdir(p):
        raise _errors.NotFoundError(None, None, "Could not find directory %s" % path)
    return sorted(_os.listdir(p))


def glob(pattern):
    if isinstance(pattern, (list, tuple)):
        return [m for p in pattern for m in glob(p)]
    return sorted(_glob.glob(_local(pattern)))


def remove(path):
    p = _local(path)
    try:
        _os.remove(p)
    except OSError as e:
        _raise(e, p)


def rename(oldname, newname, overwrite=False):
    old, new = _local(oldname), _local(newname)
    if not overwrite and _os.path.exists(new):
        raise _errors.AlreadyExistsError(None, None, "file already exists")
    try:
        _os.replace(old, new)
    except OSError as e:
        _raise(e, old)


def copy(oldpath, newpath, overwrite=False):
    old, new = _local(oldpath), _local(newpath)
    if not overwrite and _os.path.exists(new):
        raise _errors.AlreadyExistsError(None, None, "file already exists")
    try:
        _shutil.copyfile(old, new)
    except OSError as e:
        _raise(e, old)


def rmtree(path):
    p = _local(path)
    if not _os.path.exists(p):
        raise _errors.NotFoundError(None, None, "%s; No such file or directory" % p)
    try:
        if _os.path.isdir(p) and not _os.path.islink(p):
            _shutil.rmtree(p)
        else:
            _os.remove(p)
    except OSError as e:
        _raise(e, p)


def stat(path):
    p = _local(path)
    try:
        st = _os.stat(p)
    except OSError as e:
        _raise(e, p)
    return FileStatistics(st.st_size, st.st_mtime_ns, _os.path.isdir(p))


def walk(top, in_order=True):
    """(dirname, subdirectories, files) for top and each directory below it, parents first
    (in_order) or last; nothing for a top that does not exist, as TensorFlow's Walk."""
    p = _local(top)
    for dirpath, dirs, files in _os.walk(p, topdown=in_order):
        dirs.sort()
        yield dirpath, dirs, sorted(files)


# tf.gfile's CamelCase names
Exists = exists
IsDirectory = isdir
MakeDirs = makedirs
MkDir = mkdir
ListDirectory = listdir
Glob = glob
Remove = remove
Rename = rename
Copy = copy
DeleteRecursively = rmtree
Stat = stat
Walk = walk
