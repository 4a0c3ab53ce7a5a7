#!/usr/bin/python3
# eiofs.py ROOT MOUNT - a disk that fails: FUSE passthrough of ROOT at MOUNT
# (python3-fusepy) whose operations fail with EIO on request, for
# tests/e2e/eio_disk.sh.  ROOT/.fault holds "OP REGEX": OP is write, fsync
# (files and directories), rename, read or all; paths under MOUNT (from "/")
# matching REGEX fail that operation.  No .fault: no faults.  OP shrink (not
# in all) fails nothing: the files matching REGEX report 4 KiB more in stat
# than a read gives, as a file cut by another process after it was stat'd.
import errno, os, re, sys
from fusepy import FUSE, FuseOSError, Operations

class EIO(Operations):
    def __init__(self, root):
        self.root = root
    def _p(self, path):
        return os.path.join(self.root, path.lstrip('/'))
    def _matches(self, op, path):
        try:
            with open(os.path.join(self.root, '.fault')) as f:
                spec = f.read().split(None, 1)
        except OSError:
            return False
        ops = (op, 'all') if op != 'shrink' else (op,)
        return len(spec) == 2 and spec[0] in ops and re.search(spec[1].strip(), path)
    def _fault(self, op, path):
        if self._matches(op, path):
            raise FuseOSError(errno.EIO)
    def access(self, path, mode):
        if not os.access(self._p(path), mode):
            raise FuseOSError(errno.EACCES)
    def chmod(self, path, mode):
        return os.chmod(self._p(path), mode)
    def chown(self, path, uid, gid):
        return os.chown(self._p(path), uid, gid)
    def getattr(self, path, fh=None):
        st = os.lstat(self._p(path))
        a = {k: getattr(st, k) for k in ('st_atime', 'st_ctime', 'st_gid', 'st_mode',
             'st_mtime', 'st_nlink', 'st_size', 'st_uid', 'st_ino')}
        if self._matches('shrink', path):
            a['st_size'] += 4096
        return a
    def readdir(self, path, fh):
        return ['.', '..'] + os.listdir(self._p(path))
    def readlink(self, path):
        return os.readlink(self._p(path))
    def mknod(self, path, mode, dev):
        return os.mknod(self._p(path), mode, dev)
    def rmdir(self, path):
        return os.rmdir(self._p(path))
    def mkdir(self, path, mode):
        return os.mkdir(self._p(path), mode)
    def statfs(self, path):
        stv = os.statvfs(self._p(path))
        return {k: getattr(stv, k) for k in ('f_bavail', 'f_bfree', 'f_blocks', 'f_bsize',
                'f_favail', 'f_ffree', 'f_files', 'f_flag', 'f_frsize', 'f_namemax')}
    def unlink(self, path):
        return os.unlink(self._p(path))
    def symlink(self, name, target):
        return os.symlink(target, self._p(name))
    def rename(self, old, new):
        self._fault('rename', new)
        return os.rename(self._p(old), self._p(new))
    def link(self, target, name):
        return os.link(self._p(name), self._p(target))
    def utimens(self, path, times=None):
        return os.utime(self._p(path), times)
    def open(self, path, flags):
        return os.open(self._p(path), flags)
    def create(self, path, mode, fi=None):
        return os.open(self._p(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    def read(self, path, length, offset, fh):
        self._fault('read', path)
        os.lseek(fh, offset, os.SEEK_SET)
        return os.read(fh, length)
    def write(self, path, buf, offset, fh):
        self._fault('write', path)
        os.lseek(fh, offset, os.SEEK_SET)
        return os.write(fh, buf)
    def truncate(self, path, length, fh=None):
        with open(self._p(path), 'r+') as f:
            f.truncate(length)
    def flush(self, path, fh):
        return os.fsync(fh)
    def release(self, path, fh):
        return os.close(fh)
    def fsync(self, path, fdatasync, fh):
        self._fault('fsync', path)
        return os.fsync(fh)
    def fsyncdir(self, path, datasync, fh):
        self._fault('fsync', path)
        return 0

if __name__ == '__main__':
    # No attribute or name caching in the kernel: a fault set in .fault
    # applies to the next stat, not one a second later (the kernel's default
    # 1 s cache would give a stat made just before `fault shrink` the true
    # size, and a reader would then see no shrink).
    FUSE(EIO(sys.argv[1]), sys.argv[2], nothreads=True, foreground=True, allow_other=True,
         attr_timeout=0, entry_timeout=0)
