/*
 * fixed-stat.c: runs a command under ptrace and rewrites what the stat
 * system calls report about files under one directory, so that the
 * command's view of those files does not depend on when or where it runs.
 *
 *     fixed-stat ROOT COMMAND [ARG...]
 *
 * For every file under ROOT, every stat (stat, lstat, fstat, newfstatat,
 * statx) reports all four times as FIXED_EPOCH, the device as FIXED_DEV and
 * the inode number as a hash of the file's path relative to ROOT; a
 * directory's size is one block. Type, mode, a file's size and link count
 * are the file's own. Every directory under ROOT is listed (getdents64) in
 * byte order of its names, with the same inode numbers. Files outside ROOT,
 * and failed calls, are left alone. The exit status is the command's.
 *
 * Why: componentize-py snapshots CPython after running it over files under
 * its temporary directories, and what CPython saw is in the snapshot. The
 * import system caches each directory's modification time; C library stat
 * buffers and freed objects keep inode numbers, devices and times (wasmtime
 * turns a device and inode into WASI's metadata hash, which wasi-libc
 * reports as st_ino and st_dev). Those come from the kernel through raw
 * system calls, which no preload library sees, and no file system gives
 * them fixed values (utimensat cannot set a birth time or a change time).
 * The order in which a directory lists its entries is the file system's
 * (ext4's depends on a per-file-system hash seed, tmpfs's on the kernel
 * version) and changes what CPython allocates, and when. So the build runs
 * under this tracer. A seccomp filter stops the command only at the stat
 * and getdents64 calls; everything else runs at full speed.
 *
 * x86_64 Linux only. A build tool, never part of plimsoll.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/stat.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#if !defined(__x86_64__)
#error "fixed-stat supports x86_64 Linux only"
#endif

/* 2000-01-01T00:00:00Z, as in fixed-clocks.c. */
#define FIXED_EPOCH 946684800L
#define FIXED_DEV_MAJOR 0u
#define FIXED_DEV_MINOR 42u

static char root[PATH_MAX];
static size_t root_len;

static void die(const char *what) {
    fprintf(stderr, "fixed-stat: %s: %s\n", what, strerror(errno));
    exit(125);
}

/* ---- reading and writing the tracee's memory ---------------------------- */

static int read_mem(pid_t pid, uint64_t addr, void *buf, size_t len) {
    struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};
    return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

static int write_mem(pid_t pid, uint64_t addr, const void *buf, size_t len) {
    struct iovec local = {(void *)buf, len}, remote = {(void *)(uintptr_t)addr, len};
    return process_vm_writev(pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

/* A NUL-terminated path from the tracee, read in pieces so that a string
 * near the end of a mapping is still read. */
static int read_path(pid_t pid, uint64_t addr, char *out, size_t cap) {
    size_t got = 0;
    while (got < cap) {
        size_t chunk = 256 - ((addr + got) % 256);
        if (chunk > cap - got) chunk = cap - got;
        if (read_mem(pid, addr + got, out + got, chunk) != 0) return -1;
        if (memchr(out + got, '\0', chunk) != NULL) return 0;
        got += chunk;
    }
    return -1;
}

/* ---- which file a call was about ---------------------------------------- */

static int readlink_into(const char *link, char *out, size_t cap) {
    ssize_t n = readlink(link, out, cap - 1);
    if (n < 0 || (size_t)n >= cap - 1) return -1;
    out[n] = '\0';
    return 0;
}

/* The absolute path a call named: `path` relative to `dirfd` (or the
 * thread's working directory), or `dirfd` itself when `path` is empty. */
static int resolve(pid_t pid, int dirfd, const char *path, char *out, size_t cap) {
    if (path[0] == '/') {
        if (strlen(path) >= cap) return -1;
        strcpy(out, path);
        return 0;
    }
    char link[64];
    if (dirfd == AT_FDCWD) snprintf(link, sizeof link, "/proc/%d/cwd", pid);
    else snprintf(link, sizeof link, "/proc/%d/fd/%d", pid, dirfd);
    if (readlink_into(link, out, cap) != 0) return -1;
    if (path[0] == '\0') return 0;
    size_t len = strlen(out);
    if (len + 1 + strlen(path) >= cap) return -1;
    out[len] = '/';
    strcpy(out + len + 1, path);
    return 0;
}

/* `path` made lexically canonical in place: no "//", no "/./", ".."
 * applied, no trailing "/". Symbolic links are not followed: the files
 * componentize-py extracts have none. */
static void canonicalize(char *path) {
    char *parts[PATH_MAX / 2];
    size_t n = 0;
    for (char *save = NULL, *p = strtok_r(path, "/", &save); p; p = strtok_r(NULL, "/", &save)) {
        if (strcmp(p, ".") == 0) continue;
        if (strcmp(p, "..") == 0) {
            if (n > 0) n--;
            continue;
        }
        parts[n++] = p;
    }
    char out[PATH_MAX];
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        len += (size_t)snprintf(out + len, sizeof out - len, "/%s", parts[i]);
        if (len >= sizeof out) return;
    }
    if (len == 0) strcpy(out, "/");
    strcpy(path, out);
}

/* The inode number a file under root is given: FNV-1a of its path below
 * root, never 0. */
static uint64_t fixed_ino(const char *below_root) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const unsigned char *p = (const unsigned char *)below_root; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ULL;
    }
    return h ? h : 1;
}

/* Whether `path` (canonical) is under root; if so, its inode number. */
static int under_root(const char *path, uint64_t *ino) {
    if (strncmp(path, root, root_len) != 0) return 0;
    if (path[root_len] != '\0' && path[root_len] != '/' && strcmp(root, "/") != 0) return 0;
    *ino = fixed_ino(path + root_len);
    return 1;
}

/* ---- rewriting the results ----------------------------------------------- */

static void fix_statx(pid_t pid, uint64_t buf, uint64_t ino) {
    struct statx sx;
    if (read_mem(pid, buf, &sx, sizeof sx) != 0) return;
    const struct statx_timestamp t = {.tv_sec = FIXED_EPOCH, .tv_nsec = 0};
    sx.stx_atime = sx.stx_btime = sx.stx_ctime = sx.stx_mtime = t;
    sx.stx_ino = ino;
    sx.stx_dev_major = FIXED_DEV_MAJOR;
    sx.stx_dev_minor = FIXED_DEV_MINOR;
    if (S_ISDIR(sx.stx_mode)) sx.stx_size = 4096;
    sx.stx_blksize = 4096;
    sx.stx_blocks = (sx.stx_size + 4095) / 4096 * 8;
    sx.stx_mnt_id = 0;
    write_mem(pid, buf, &sx, sizeof sx);
}

static void fix_stat(pid_t pid, uint64_t buf, uint64_t ino) {
    struct stat st;
    if (read_mem(pid, buf, &st, sizeof st) != 0) return;
    const struct timespec t = {.tv_sec = FIXED_EPOCH, .tv_nsec = 0};
    st.st_atim = st.st_mtim = st.st_ctim = t;
    st.st_ino = ino;
    st.st_dev = makedev(FIXED_DEV_MAJOR, FIXED_DEV_MINOR);
    if (S_ISDIR(st.st_mode)) st.st_size = 4096;
    st.st_blksize = 4096;
    st.st_blocks = (st.st_size + 4095) / 4096 * 8;
    write_mem(pid, buf, &st, sizeof st);
}

/* At the exit of a stat call that succeeded: rewrite its result if the
 * file is under root. */
static void fix_result(pid_t pid) {
    struct user_regs_struct r;
    if (ptrace(PTRACE_GETREGS, pid, 0, &r) != 0 || r.rax != 0) return;
    int dirfd = AT_FDCWD, is_statx = 0;
    uint64_t path_addr = 0, buf = 0;
    switch (r.orig_rax) {
    case SYS_stat:
    case SYS_lstat:
        path_addr = r.rdi;
        buf = r.rsi;
        break;
    case SYS_fstat:
        dirfd = (int)r.rdi;
        buf = r.rsi;
        break;
    case SYS_newfstatat:
        dirfd = (int)r.rdi;
        path_addr = r.rsi;
        buf = r.rdx;
        break;
    case SYS_statx:
        dirfd = (int)r.rdi;
        path_addr = r.rsi;
        buf = r.r8;
        is_statx = 1;
        break;
    default:
        return;
    }
    char path[PATH_MAX] = "", full[PATH_MAX];
    if (path_addr != 0 && read_path(pid, path_addr, path, sizeof path) != 0) return;
    if (resolve(pid, dirfd, path, full, sizeof full) != 0) return;
    canonicalize(full);
    uint64_t ino;
    if (!under_root(full, &ino)) return;
    if (is_statx) fix_statx(pid, buf, ino);
    else fix_stat(pid, buf, ino);
}

/* ---- listing directories in a fixed order --------------------------------
 * A getdents64 on a directory under root is answered here: the tracer lists
 * the directory itself, sorts the names, and writes the entries from the
 * descriptor's position on into the caller's buffer. The position is ours,
 * an index into the sorted names: the call itself is turned into an lseek
 * to the index after the last entry returned, so that the kernel keeps the
 * position per open file as it would (and rewinddir's lseek to 0 works). */

struct linux_dirent64_head {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
};

/* One traced thread's getdents64 in flight, between its entry and exit. */
struct pending_listing {
    pid_t tid;
    uint64_t buf;
    long result; /* bytes to report, or -errno */
    char *data;
};

#define MAX_PENDING 1024
static struct pending_listing pending[MAX_PENDING];

static struct pending_listing *pending_for(pid_t tid, int create) {
    for (size_t i = 0; i < MAX_PENDING; i++)
        if (pending[i].tid == tid) return &pending[i];
    if (!create) return NULL;
    for (size_t i = 0; i < MAX_PENDING; i++)
        if (pending[i].tid == 0) {
            pending[i].tid = tid;
            return &pending[i];
        }
    return NULL;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static unsigned char dirent_type(const char *dir, const char *name) {
    char path[PATH_MAX];
    struct stat st;
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path) return DT_UNKNOWN;
    if (lstat(path, &st) != 0) return DT_UNKNOWN;
    return S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : S_ISLNK(st.st_mode) ? DT_LNK : DT_UNKNOWN;
}

/* The entries of `dir` (canonical, under root) from index `from` on, in
 * name order, as getdents64 writes them, at most `cap` bytes. Returns the
 * bytes written (0 at the end) or -errno, and the index after the last. */
static long list_sorted(const char *dir, long from, char *out, size_t cap, long *next) {
    DIR *d = opendir(dir);
    if (d == NULL) return -errno;
    size_t n = 0, alloc = 64;
    char **names = malloc(alloc * sizeof *names);
    if (names == NULL) {
        closedir(d);
        return -ENOMEM;
    }
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (n == alloc) {
            char **bigger = realloc(names, (alloc *= 2) * sizeof *names);
            if (bigger == NULL) break;
            names = bigger;
        }
        if ((names[n] = strdup(e->d_name)) == NULL) break;
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, by_name);

    long written = 0, i = from < 0 ? 0 : from;
    for (; i < (long)n; i++) {
        size_t name_len = strlen(names[i]);
        size_t reclen = (offsetof(struct linux_dirent64_head, d_type) + 1 + name_len + 1 + 7) & ~(size_t)7;
        if ((size_t)written + reclen > cap) break;
        char path[PATH_MAX];
        uint64_t ino = 1;
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, names[i]) < sizeof path) {
            canonicalize(path);
            under_root(path, &ino);
        }
        struct linux_dirent64_head head = {
            .d_ino = ino,
            .d_off = i + 1,
            .d_reclen = (unsigned short)reclen,
            .d_type = dirent_type(dir, names[i]),
        };
        char *rec = out + written;
        memset(rec, 0, reclen);
        memcpy(rec, &head, offsetof(struct linux_dirent64_head, d_type) + 1);
        memcpy(rec + offsetof(struct linux_dirent64_head, d_type) + 1, names[i], name_len);
        written += (long)reclen;
    }
    for (size_t k = 0; k < n; k++) free(names[k]);
    free(names);
    *next = i;
    /* Entries left but none fits: the caller's buffer is too small. */
    if (written == 0 && i < (long)n) return -EINVAL;
    return written;
}

/* The position the kernel keeps for the tracee's descriptor. */
static long fd_position(pid_t pid, int fd) {
    char path[64], line[128];
    snprintf(path, sizeof path, "/proc/%d/fdinfo/%d", pid, fd);
    FILE *f = fopen(path, "r");
    if (f == NULL) return -1;
    long pos = -1;
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "pos: %ld", &pos) == 1) break;
    fclose(f);
    return pos;
}

/* At the entry of a getdents64: for a directory under root, answer it
 * (the call becomes an lseek) and return 1; otherwise 0 (run it as is). */
static int begin_listing(pid_t pid) {
    struct user_regs_struct r;
    if (ptrace(PTRACE_GETREGS, pid, 0, &r) != 0) return 0;
    int fd = (int)r.rdi;
    char dir[PATH_MAX];
    if (resolve(pid, fd, "", dir, sizeof dir) != 0) return 0;
    canonicalize(dir);
    uint64_t ino;
    if (!under_root(dir, &ino)) return 0;
    long pos = fd_position(pid, fd);
    if (pos < 0) return 0;
    size_t cap = r.rdx > (1u << 20) ? (1u << 20) : (size_t)r.rdx;
    struct pending_listing *p = pending_for(pid, 1);
    if (p == NULL) return 0;
    free(p->data); /* a thread that died mid-call may have left one behind */
    p->data = malloc(cap ? cap : 1);
    if (p->data == NULL) {
        p->tid = 0;
        return 0;
    }
    long next = pos;
    p->result = list_sorted(dir, pos, p->data, cap, &next);
    p->buf = r.rsi;
    r.orig_rax = SYS_lseek;
    r.rdi = (unsigned long)fd;
    r.rsi = (unsigned long)next;
    r.rdx = SEEK_SET;
    if (ptrace(PTRACE_SETREGS, pid, 0, &r) != 0) {
        free(p->data);
        p->data = NULL;
        p->tid = 0;
        return 0;
    }
    return 1;
}

/* At the exit of the lseek a getdents64 became: report the listing. */
static void end_listing(pid_t pid) {
    struct pending_listing *p = pending_for(pid, 0);
    if (p == NULL) return;
    struct user_regs_struct r;
    if (ptrace(PTRACE_GETREGS, pid, 0, &r) == 0) {
        long result = p->result;
        if ((long)r.rax < 0) result = (long)r.rax;
        else if (result > 0 && write_mem(pid, p->buf, p->data, (size_t)result) != 0) result = -EFAULT;
        r.rax = (unsigned long)result;
        ptrace(PTRACE_SETREGS, pid, 0, &r);
    }
    free(p->data);
    p->data = NULL;
    p->tid = 0;
}

/* ---- the tracer ------------------------------------------------------------ */

/* Stops the tracee (SECCOMP_RET_TRACE) at the five stat calls and at
 * getdents64 only. (The old getdents is not used by anything built here.) */
static void install_filter(void) {
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getdents64, 6, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_stat, 5, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_lstat, 4, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_fstat, 3, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_newfstatat, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_statx, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE),
    };
    struct sock_fprog prog = {.len = sizeof code / sizeof code[0], .filter = code};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die("no_new_privs");
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) die("seccomp filter");
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: fixed-stat ROOT COMMAND [ARG...]\n");
        return 125;
    }
    if (realpath(argv[1], root) == NULL) die(argv[1]);
    root_len = strlen(root);

    pid_t child = fork();
    if (child < 0) die("fork");
    if (child == 0) {
        if (ptrace(PTRACE_TRACEME, 0, 0, 0) != 0) die("ptrace(TRACEME)");
        raise(SIGSTOP); /* until the tracer has set its options */
        install_filter();
        execvp(argv[2], argv + 2);
        die(argv[2]);
    }

    int status;
    if (waitpid(child, &status, 0) != child || !WIFSTOPPED(status)) die("waiting for the command");
    long options = PTRACE_O_TRACESECCOMP | PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACECLONE |
                   PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACEEXEC |
                   PTRACE_O_EXITKILL;
    if (ptrace(PTRACE_SETOPTIONS, child, 0, options) != 0) die("ptrace(SETOPTIONS)");
    if (ptrace(PTRACE_CONT, child, 0, 0) != 0) die("ptrace(CONT)");

    int exit_code = 125;
    for (;;) {
        pid_t pid = waitpid(-1, &status, __WALL);
        if (pid < 0) {
            if (errno == EINTR) continue;
            if (errno == ECHILD) break;
            die("waitpid");
        }
        if (WIFEXITED(status)) {
            if (pid == child) exit_code = WEXITSTATUS(status);
            continue;
        }
        if (WIFSIGNALED(status)) {
            if (pid == child) exit_code = 128 + WTERMSIG(status);
            continue;
        }
        if (!WIFSTOPPED(status)) continue;
        int sig = WSTOPSIG(status), event = (unsigned)status >> 16;
        int deliver = 0;
        if (sig == SIGTRAP && event == PTRACE_EVENT_SECCOMP) {
            /* Entering a stat or getdents64 call: run it (a getdents64 under
             * root as an lseek), stop again at its exit. */
            unsigned long nr = 0;
            ptrace(PTRACE_GETEVENTMSG, pid, 0, &nr);
            struct user_regs_struct r;
            if (ptrace(PTRACE_GETREGS, pid, 0, &r) == 0 && r.orig_rax == SYS_getdents64 &&
                !begin_listing(pid)) {
                ptrace(PTRACE_CONT, pid, 0, 0);
                continue;
            }
            ptrace(PTRACE_SYSCALL, pid, 0, 0);
            continue;
        }
        if (sig == (SIGTRAP | 0x80)) {
            /* leaving it */
            struct user_regs_struct r;
            if (ptrace(PTRACE_GETREGS, pid, 0, &r) == 0 && r.orig_rax == SYS_lseek) end_listing(pid);
            else fix_result(pid);
        } else if (sig == SIGTRAP && event != 0) {
            /* clone, fork, exec: nothing to do */
        } else if (sig != SIGSTOP) {
            /* A real signal for the command. A SIGSTOP is the initial stop of
             * a newly traced thread or process (a build sends none itself). */
            deliver = sig;
        }
        /* A thread with a listing in flight must still stop at its exit
         * (ptrace(2) says no other stop comes between; this is belt and
         * braces, since its result is not the call's until then). */
        ptrace(pending_for(pid, 0) ? PTRACE_SYSCALL : PTRACE_CONT, pid, 0, deliver);
    }
    return exit_code;
}
