#!/usr/bin/python3
# tests/posix-semantics.py DIR [prepare]: the same calls on any directory,
# one line per call, "what => what it gave": the result or the errno's
# name, and the modes and owners that follow; "done" at the end. tests/guest/32 runs it on the reference
# server's mount and on tmpfs directly, and the lines must be the same:
# ownership, chmod, chown, utimensat (UTIME_NOW/UTIME_OMIT), the clearing
# of set-user-ID and set-group-ID bits, and the sticky bit, as POSIX and
# Linux define them. "prepare", as root, makes what the user's calls need:
#   g       a root file, mode 0666
#   sgid/   a root directory of group 0, mode 2777
#   sticky/ a root directory, mode 1777, with a root file 0666 in it
# The rest runs as an unprivileged user, not in group 0.
import errno
import os
import sys

d = sys.argv[1]


def p(name):
    return os.path.join(d, name)


def do(label, fn, *args, **kw):
    try:
        r = fn(*args, **kw)
        print("%s => ok%s" % (label, "" if r is None else " " + str(r)))
    except OSError as e:
        print("%s => %s" % (label, errno.errorcode[e.errno]))


def st(label, name):
    try:
        s = os.lstat(p(name))
        print("%s => mode %o, owner %s:%s" % (label, s.st_mode, "me" if s.st_uid == os.getuid()
                                             else s.st_uid, "mine" if s.st_gid == os.getgid()
                                             else s.st_gid))
    except OSError as e:
        print("%s => %s" % (label, errno.errorcode[e.errno]))


if sys.argv[2:] == ["prepare"]:
    os.umask(0)
    with open(p("g"), "w") as f:
        f.write("root")
    os.chmod(p("g"), 0o666)
    os.mkdir(p("sgid"), 0o777)
    os.chown(p("sgid"), 0, 0)
    os.chmod(p("sgid"), 0o2777)
    os.mkdir(p("sticky"), 0o1777)
    with open(p("sticky/theirs"), "w") as f:
        f.write("root")
    os.chmod(p("sticky/theirs"), 0o666)
    sys.exit(0)

os.umask(0o022)
me, mine = os.getuid(), os.getgid()
# a file of one's own
do("create f 0644", lambda: os.close(os.open(p("f"), os.O_CREAT | os.O_WRONLY, 0o644)))
st("f", "f")
do("chmod f 04755", os.chmod, p("f"), 0o4755)
st("f after chmod", "f")
do("write to f, set-user-ID", lambda: os.close((lambda fd: (os.write(fd, b"x"), fd)[1])(os.open(p("f"), os.O_WRONLY))))
st("f after a write: set-user-ID cleared", "f")
do("chmod f 02775", os.chmod, p("f"), 0o2775)
do("write to f, set-group-ID", lambda: os.close((lambda fd: (os.write(fd, b"x"), fd)[1])(os.open(p("f"), os.O_WRONLY))))
st("f after a write: set-group-ID (group-executable) cleared", "f")
do("chmod f 02745", os.chmod, p("f"), 0o2745)
do("write to f, set-group-ID without group execute", lambda: os.close((lambda fd: (os.write(fd, b"x"), fd)[1])(os.open(p("f"), os.O_WRONLY))))
st("f after a write: set-group-ID without group execute kept", "f")
do("chmod f 06755", os.chmod, p("f"), 0o6755)
do("truncate f", os.truncate, p("f"), 1)
st("f after truncate: set-user-ID and set-group-ID cleared", "f")
do("chmod f 04755", os.chmod, p("f"), 0o4755)
do("open f O_TRUNC", lambda: os.close(os.open(p("f"), os.O_WRONLY | os.O_TRUNC)))
st("f after open(O_TRUNC): set-user-ID cleared", "f")
do("chmod f 04755", os.chmod, p("f"), 0o4755)
do("fallocate f", lambda: (lambda fd: (os.posix_fallocate(fd, 0, 8192), os.close(fd)))(os.open(p("f"), os.O_WRONLY)) and None)
st("f after fallocate: set-user-ID cleared", "f")
do("chown f to itself", os.chown, p("f"), me, mine)
do("chown f to root", os.chown, p("f"), 0, -1)
do("chown f to group 0 (not a member)", os.chown, p("f"), -1, 0)
do("utimensat f: now", os.utime, p("f"))
do("utimensat f: a time", os.utime, p("f"), ns=(10**9, 2 * 10**9))
s = os.stat(p("f"))
print("f times, set => atime %d mtime %d" % (s.st_atime_ns, s.st_mtime_ns))
# a file of root's, mode 0666: writable, not one's own
do("utimensat g: now (may: writable)", os.utime, p("g"))
do("utimensat g: a time (may not: not the owner)", os.utime, p("g"), ns=(10**9, 2 * 10**9))
do("chmod g", os.chmod, p("g"), 0o600)
do("chown g", os.chown, p("g"), me, mine)
do("truncate g", os.truncate, p("g"), 1)
st("g", "g")
# UTIME_OMIT and UTIME_NOW, through the raw call
import ctypes
libc = ctypes.CDLL(None, use_errno=True)


class timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


UTIME_NOW, UTIME_OMIT = (1 << 30) - 1, (1 << 30) - 2
ts = (timespec * 2)(timespec(5, UTIME_OMIT), timespec(7, 0))
r = libc.utimensat(-100, p("f").encode(), ts, 0)
print("utimensat f: atime omitted, mtime 7 s => %s" % ("ok" if r == 0 else errno.errorcode[ctypes.get_errno()]))
s = os.stat(p("f"))
print("f times, atime omitted => atime %d mtime %d" % (s.st_atime_ns, s.st_mtime_ns))
ts = (timespec * 2)(timespec(0, UTIME_OMIT), timespec(0, UTIME_NOW))
r = libc.utimensat(-100, p("g").encode(), ts, 0)
print("utimensat g: atime omitted, mtime now => %s" % ("ok" if r == 0 else errno.errorcode[ctypes.get_errno()]))
# a set-group-ID directory of group 0: what is made in it
do("create sgid/f", lambda: os.close(os.open(p("sgid/f"), os.O_CREAT | os.O_WRONLY, 0o644)))
st("sgid/f: the directory's group", "sgid/f")
do("mkdir sgid/d", os.mkdir, p("sgid/d"), 0o755)
st("sgid/d: the group, and set-group-ID", "sgid/d")
do("chmod sgid/f 02755 (group 0: not a member)", os.chmod, p("sgid/f"), 0o2755)
st("sgid/f: set-group-ID silently dropped", "sgid/f")
# the sticky bit
do("unlink sticky/theirs", os.unlink, p("sticky/theirs"))
do("rename sticky/theirs", os.rename, p("sticky/theirs"), p("sticky/mine"))
do("create sticky/mine", lambda: os.close(os.open(p("sticky/mine"), os.O_CREAT | os.O_WRONLY, 0o600)))
do("unlink sticky/mine", os.unlink, p("sticky/mine"))
print("done")
