/*
 * nosync - an LD_PRELOAD library that makes waiting for the disk free:
 * fsync, fdatasync, syncfs, sync_file_range and sync return at once, as if
 * the device had nothing to do.  Every other call (write, rename, unlink,
 * mkdir) still goes to the kernel.
 *
 * bench/run.sh runs a restore of decree and git's reset of the same change
 * under it as one more row: what each tool costs once no write is ever
 * waited for.  git's checkout does not sync the working tree; decree's
 * restore makes its capture, its transaction log, each new file and the
 * directories it changed durable before it says "done" (DESIGN.md), about
 * 35 flushes on a restore of 16 files.  The difference between the row and
 * the real one is what that promise costs on this disk.
 *
 * Measurement only: a process run under it loses every durability
 * guarantee.  Built by bench/run.sh with `cc -O2 -shared -fPIC`.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <unistd.h>

int fsync(int fd)
{
	(void)fd;
	return 0;
}

int fdatasync(int fd)
{
	(void)fd;
	return 0;
}

int syncfs(int fd)
{
	(void)fd;
	return 0;
}

int sync_file_range(int fd, off_t offset, off_t nbytes, unsigned int flags)
{
	(void)fd;
	(void)offset;
	(void)nbytes;
	(void)flags;
	return 0;
}

void sync(void)
{
}
