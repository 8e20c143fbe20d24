/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * fakegpu.h - the user-space ABI of fakegpu.ko, a teaching GPU driver.
 *
 * Shared verbatim by the kernel module (kmod/fakegpu*.c) and by the user-space
 * driver libfakegpu (src/gpu/).  Pure C, only <linux/types.h> and
 * <linux/ioctl.h>, so it compiles as kernel C, user C and C++.
 *
 * Rules every struct here follows:
 *  - fixed size, naturally aligned __u32/__u64 fields, explicit padding, no
 *    pointers, no enums, no bitfields: the layout is identical for 32- and
 *    64-bit callers;
 *  - "in" fields are read by the driver, "out" fields are written by it;
 *  - every pad/reserved/flags field must be zero on input (EINVAL otherwise),
 *    so a later ABI version can give them a meaning;
 *  - every ioctl number encodes the struct size (_IOWR), so a caller built
 *    against a different layout gets ENOTTY instead of misinterpreted bytes.
 *
 * Access mode - the open(2) flags of the descriptor, not the node's
 * permission bits: a descriptor opened O_RDONLY may look, not act.
 *  - [read] commands (INFO, MAP, WAIT) work on any descriptor;
 *  - [write] commands (ALLOC, FREE, SUBMIT, DOORBELL, RESET) create, change or
 *    submit something and need FMODE_WRITE (O_RDWR or O_WRONLY).  On a
 *    read-only descriptor they fail with EBADF, as write(2) does, before the
 *    argument is read and before RESET's privilege check;
 *  - mmap(2) of the submission ring on a read-only descriptor is EACCES, even
 *    without PROT_WRITE: the first mapping creates the ring, which is only
 *    for submitting.  The fence page may be mapped PROT_READ.
 * A read-only descriptor is a context of its own that can never hold a
 * buffer or a fence, so MAP finds no handle and WAIT no fence there.  This is
 * what keeps a node passed read-only into a container (a device cgroup that
 * allows only "r") from running work or holding device memory.
 *
 * Faults (Xid events, the table in fakegpu(4)): a fault of one context
 * poisons it - every command but INFO and RESET then fails with EIO, WAIT
 * included, and its fence page's xid says why - while the other contexts go
 * on; a device-level fault (Xid 79) fails every command but INFO and RESET of
 * every context of the device with ENODEV until a RESET.
 *
 * The full description (nodes, errnos, parameters) is fakegpu(4).
 */
#ifndef _UAPI_FAKEGPU_H
#define _UAPI_FAKEGPU_H

#include <linux/types.h>
#include <linux/ioctl.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on every incompatible change; reported by FAKEGPU_IOCTL_INFO. */
#define FAKEGPU_ABI_VERSION 1

/*
 * The driver's release, (major << 16) | (minor << 8) | patch, reported by
 * FAKEGPU_IOCTL_INFO.  A minor release only adds (an op, an out field that
 * was reserved), so a driver serves every library of its ABI built for the
 * same or an older minor; fakegpu(4), VERSIONS.
 */
#define FAKEGPU_DRIVER_VERSION ((1 << 16) | (1 << 8) | 0) /* 1.1.0 */
#define FAKEGPU_DRIVER_VERSION_STRING "1.1.0"
#define FAKEGPU_VERSION_MAJOR(v) ((v) >> 16)
#define FAKEGPU_VERSION_MINOR(v) (((v) >> 8) & 0xff)
#define FAKEGPU_VERSION_PATCH(v) ((v) & 0xff)

/* Device nodes: /dev/fakegpu<minor> for minors 0..ndev-1, and the control node. */
#define FAKEGPU_CTL_MINOR 255
#define FAKEGPU_MAX_DEVICES 16

/* Largest single buffer, whatever the quotas say. */
#define FAKEGPU_MAX_BUFFER_SIZE (1ULL << 30)

/* ---- mmap offsets (byte offsets passed to mmap(2) on a device node) ---- */

/* The fence page: read-only, one page, struct fakegpu_fence_page. */
#define FAKEGPU_MMAP_FENCE_OFFSET 0x0ULL
/* The submission ring: read-write, info.sq_map_size bytes: struct
 * fakegpu_sq_ctrl at offset 0, then info.ring_entries struct fakegpu_job at
 * FAKEGPU_SQ_ENTRIES_OFFSET.  Needs a descriptor open for writing (EACCES). */
#define FAKEGPU_MMAP_SQ_OFFSET 0x10000ULL
#define FAKEGPU_SQ_ENTRIES_OFFSET 4096
/* Buffers: the offset returned by FAKEGPU_IOCTL_MAP, (handle << 32). */
#define FAKEGPU_MMAP_BUFFER_SHIFT 32

/* ---- jobs ---- */

#define FAKEGPU_OP_NOP 0      /* does nothing; completes its fence */
#define FAKEGPU_OP_FILL 1     /* dst[dst_offset, +length) = value (32-bit pattern) */
#define FAKEGPU_OP_COPY 2     /* dst[dst_offset, +length) = src[src_offset, +length) */
#define FAKEGPU_OP_CHECKSUM 3 /* u32 at dst[dst_offset] = crc32(src[src_offset, +length)) */
#define FAKEGPU_OP_DELAY 4    /* keeps the engine busy for length ns (driver 1.1) */
#define FAKEGPU_OP_COUNT 5

/*
 * One job, as passed to FAKEGPU_IOCTL_SUBMIT and as written into the
 * submission ring.  64 bytes.  Fields an op does not use must be zero.
 * FILL needs dst_offset and length multiples of 4; CHECKSUM needs dst_offset a
 * multiple of 4; the crc32 is the one of zlib/IEEE 802.3 (init and final
 * xor 0xffffffff).  DELAY uses only length, in nanoseconds: a job that runs
 * long, and past the module's job_timeout_ms a hang (Xid 8).  length is never 0.
 */
struct fakegpu_job {
	__u32 op;         /* FAKEGPU_OP_* */
	__u32 flags;      /* 0 */
	__u32 dst_handle; /* FILL, COPY, CHECKSUM */
	__u32 src_handle; /* COPY, CHECKSUM */
	__u64 dst_offset;
	__u64 src_offset;
	__u64 length;
	__u32 value;      /* FILL pattern */
	__u32 pad;        /* 0 */
	__u64 reserved[2]; /* 0 */
};

/* ---- shared pages ---- */

/* Written only by the driver; mapped read-only by user space. */
struct fakegpu_fence_page {
	__u64 completed;        /* every fence <= completed has completed */
	__u64 errors;           /* jobs that completed with an error (ring jobs) */
	__u64 last_error_fence; /* fence of the most recent failed job */
	__s32 last_error;       /* its negative errno */
	__u32 xid;              /* the Xid that poisoned this context; 0 while healthy */
};

/*
 * Control block at the start of the submission ring mapping.  User space
 * writes jobs into entries[tail % ring_entries], then publishes them with a
 * release store of tail, then rings FAKEGPU_IOCTL_DOORBELL once per batch.
 * The driver advances head (release store) once it has copied an entry; the
 * slots before head may be reused.  head and tail are free-running u32
 * counters; tail - head never exceeds ring_entries.
 */
struct fakegpu_sq_ctrl {
	__u32 head;      /* out: written by the driver */
	__u32 pad0[15];  /* head and tail live on separate cache lines */
	__u32 tail;      /* in: written by user space */
	__u32 pad1[15];
};

/* ---- ioctls ---- */

struct fakegpu_info {
	__u32 abi_version;  /* out: FAKEGPU_ABI_VERSION */
	__u32 device_index; /* out: minor, or FAKEGPU_CTL_MINOR */
	__u32 device_count; /* out: module parameter ndev */
	__u32 ring_entries; /* out: submission ring size (power of two) */
	__u64 sq_map_size;  /* out: length to mmap at FAKEGPU_MMAP_SQ_OFFSET */
	__u64 mem_quota;    /* out: per-context byte limit */
	__u32 handle_quota; /* out: per-context handle limit */
	__u32 reset_count;  /* out: FAKEGPU_IOCTL_RESET calls on this device */
	__u64 vram_size;    /* out: device memory */
	__u64 vram_used;    /* out: device memory in use, all contexts */
	__u64 ctx_mem_used; /* out: bytes charged to this context */
	__u32 ctx_handles;  /* out: live handles of this context */
	__u32 pad;          /* 0 */
	__u64 jobs_completed; /* out: device-wide, since load or reset */
	__u32 ctx_id;         /* out: this context's id (kernel log, fdinfo) */
	__u32 ctx_xid;        /* out: the Xid that poisoned this context, or 0 */
	__u32 device_xid;     /* out: a device-level Xid (79) until RESET, or 0 */
	__u32 driver_version; /* out: FAKEGPU_DRIVER_VERSION (0: a 1.0 driver) */
	__u64 reserved[2];    /* 0 */
};

struct fakegpu_alloc {
	__u64 size;       /* in: bytes, 1..FAKEGPU_MAX_BUFFER_SIZE */
	__u32 flags;      /* in: 0 */
	__u32 handle;     /* out: >= 1, local to this context */
	__u64 alloc_size; /* out: size rounded up to pages, charged to the quota */
	__u64 reserved;   /* 0 */
};

struct fakegpu_free {
	__u32 handle;   /* in */
	__u32 flags;    /* in: 0 */
	__u64 reserved; /* 0 */
};

struct fakegpu_map {
	__u32 handle;   /* in */
	__u32 flags;    /* in: 0 */
	__u64 offset;   /* out: pass to mmap(2) */
	__u64 size;     /* out: largest length that may be mapped */
	__u64 reserved; /* 0 */
};

struct fakegpu_submit {
	struct fakegpu_job job; /* in */
	__u64 fence;            /* out */
	__u64 reserved;         /* 0 */
};

struct fakegpu_wait {
	__u64 fence;      /* in: a fence this context was given */
	__s64 timeout_ns; /* in: 0 poll, < 0 forever, > 0 at most this long */
	__u32 flags;      /* in: 0 */
	__u32 pad;        /* 0 */
	__u64 completed;  /* out: the context's completed fence */
	__u64 reserved;   /* 0 */
};

struct fakegpu_doorbell {
	__u32 flags;      /* in: 0 */
	__u32 count;      /* out: ring entries accepted by this call */
	__u64 first_fence; /* out: fence of the first accepted entry (0 if none) */
	__u64 last_fence;  /* out: fence of the last accepted entry (0 if none) */
	__u64 reserved;    /* 0 */
};

/* Privileged: CAP_SYS_ADMIN in the initial user namespace. */
struct fakegpu_reset {
	__u32 flags;       /* in: 0 */
	__u32 reset_count; /* out: the device's reset count after this reset */
	__u64 reserved[2]; /* 0 */
};

#define FAKEGPU_IOCTL_BASE 0xF6 /* not registered: a teaching driver */

/*
 * Access mode (see the top).  [read], any descriptor: INFO, MAP, WAIT.
 * [write], only one open for writing, EBADF otherwise: ALLOC, FREE, SUBMIT,
 * DOORBELL, RESET.  The _IOWR direction bits only say which way the struct is
 * copied; they have nothing to do with the descriptor's mode.
 */
#define FAKEGPU_IOCTL_INFO     _IOWR(FAKEGPU_IOCTL_BASE, 0x00, struct fakegpu_info)
#define FAKEGPU_IOCTL_ALLOC    _IOWR(FAKEGPU_IOCTL_BASE, 0x01, struct fakegpu_alloc)
#define FAKEGPU_IOCTL_FREE     _IOWR(FAKEGPU_IOCTL_BASE, 0x02, struct fakegpu_free)
#define FAKEGPU_IOCTL_MAP      _IOWR(FAKEGPU_IOCTL_BASE, 0x03, struct fakegpu_map)
#define FAKEGPU_IOCTL_SUBMIT   _IOWR(FAKEGPU_IOCTL_BASE, 0x04, struct fakegpu_submit)
#define FAKEGPU_IOCTL_WAIT     _IOWR(FAKEGPU_IOCTL_BASE, 0x05, struct fakegpu_wait)
#define FAKEGPU_IOCTL_DOORBELL _IOWR(FAKEGPU_IOCTL_BASE, 0x06, struct fakegpu_doorbell)
#define FAKEGPU_IOCTL_RESET    _IOWR(FAKEGPU_IOCTL_BASE, 0x10, struct fakegpu_reset)

#ifdef __cplusplus
}
#endif

#endif /* _UAPI_FAKEGPU_H */
