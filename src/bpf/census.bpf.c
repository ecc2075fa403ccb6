// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * The census walk inside the kernel: buckets [first, first + count) of the
 * dentry hash table, each chain followed the way __d_lookup_rcu() follows
 * it (fs/dcache.c), every dentry tallied positive or negative under its
 * (d_sb, d_parent) in the `dirs` hash map.
 *
 * Run on demand with BPF_PROG_TEST_RUN: a raw tracepoint program so run
 * executes under rcu_read_lock() (__bpf_prog_test_run_raw_tp() in
 * net/bpf/test_run.c), which keeps every dentry on an RCU hash chain from
 * being freed while it is read. Nothing is written but this program's maps.
 *
 * The structures are declared with only the fields read, and
 * preserve_access_index: libbpf relocates each offset against the running
 * kernel's BTF at load (CO-RE), so one object serves every kernel.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

struct hlist_bl_node {
	struct hlist_bl_node *next;
} __attribute__((preserve_access_index));

struct qstr {
	union {
		struct {
			__u32 hash;
			__u32 len;
		};
		__u64 hash_len;
	};
	const unsigned char *name;
} __attribute__((preserve_access_index));

struct inode;
struct super_block;

struct hlist_bl_node___pp {
	struct hlist_bl_node *next, **pprev;
} __attribute__((preserve_access_index));

struct path {
	struct dentry *dentry;
} __attribute__((preserve_access_index));

struct file {
	struct path f_path;
} __attribute__((preserve_access_index));

struct fdtable {
	struct file **fd;
} __attribute__((preserve_access_index));

struct files_struct {
	struct fdtable *fdt;
} __attribute__((preserve_access_index));

struct task_struct {
	struct files_struct *files;
} __attribute__((preserve_access_index));

struct dentry {
	struct hlist_bl_node d_hash;
	struct dentry *d_parent;
	struct qstr d_name;
	struct inode *d_inode;
	struct super_block *d_sb;
} __attribute__((preserve_access_index));

/* Longest chain followed (the kcore walk's MAX_CHAIN). */
#define MAX_CHAIN 4096
/*
 * Steps of one run at most: a dentry, a batch of bucket heads read, or a
 * look through the batch for the next chain each. Bounds how long one run
 * holds RCU. A run may be given a lower bound (args[5]).
 */
#define MAX_STEPS (1 << 18)
/* Bucket heads read at once: 512 bytes. A run may be given fewer (args[6]). */
#define BATCH 64
/* Directories tallied before user space drains the map. */
#define MAX_DIRS (1 << 18)
/* Most bytes of a dentry copied at once: every field above lies in them. */
#define DENTRY_READ 256
/*
 * The lowest kernel address on x86-64: that of 5-level paging (LA57, where
 * the direct map starts at 0xff11000000000000), below 4-level paging's
 * 0xffff800000000000; under 4-level paging nothing between the two is
 * canonical, and a read there faults (bpf_probe_read_kernel says so).
 */
#define KERNEL_MIN 0xff00000000000000ULL
#define MEM_LEN 4096

struct dir_key {
	__u64 sb;
	__u64 parent;
};

struct dir_counts {
	__u64 positive;
	__u64 negative;
};

/* Reads skipped, by reason, and what was walked. Layout shared with probe/bpf_prog.rs. */
struct stats {
	__u64 buckets;
	__u64 walked;
	__u64 bad_pointer;
	__u64 unreadable;
	__u64 chains_cut;
	__u64 wrong_bucket;
	__u64 unrecorded;
	__u64 created;
	__u64 runs;
	__u64 max_steps;
	__u64 steps;
	__u64 batches;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_DIRS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct dir_key);
	__type(value, struct dir_counts);
} dirs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stats);
} stats SEC(".maps");

struct mem_buf {
	__u8 b[MEM_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mem_buf);
} mem SEC(".maps");

/*
 * The walk's state lives in a map, not on the stack: values loaded from a
 * map are unknown to the verifier, so it verifies the loop's callback once
 * for all iterations instead of tracking each counter's value through them.
 *
 * The bucket heads are read a batch at a time into `heads`: buckets
 * [base, base + len), of which those before base + pos are done (their
 * chains walked, or empty). A batch that cannot be read at once is read
 * one head at a time (`single`), so each unreadable bucket is counted.
 */
struct walk {
	__u64 table;
	__u64 shift;
	__u64 end;
	__u64 room;
	__u64 limit;
	__u64 batch;
	__u64 base;
	__u64 len;
	__u64 pos;
	__u64 single;
	__u64 bucket;
	__u64 node;
	__u64 steps;
	__u64 chain;
	__u64 heads[BATCH];
	/* The dentry as copied, read as words: clang compiles a cast of a byte array's element into byte loads. */
	union {
		__u8 b[DENTRY_READ];
		__u32 w32[DENTRY_READ / 4];
		__u64 w64[DENTRY_READ / 8];
	} d;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct walk);
} state SEC(".maps");

/* What each step is given (on the run's stack): the two map values, looked up once a run. */
struct step_ctx {
	struct walk *w;
	struct stats *st;
};

static __always_inline __u64 at64(struct walk *w, __u64 off)
{
	return w->d.w64[(off / 8) & (DENTRY_READ / 8 - 1)];
}

static __always_inline __u32 at32(struct walk *w, __u64 off)
{
	return w->d.w32[(off / 4) & (DENTRY_READ / 4 - 1)];
}

/* Reads the heads of the next batch; 1 at the range's end. */
static __always_inline long read_batch(struct walk *w, struct stats *st)
{
	__u64 next = w->base + w->len;
	if (next >= w->end)
		return 1;
	__u64 n = w->end - next;
	if (n > w->batch)
		n = w->batch;
	if (n > BATCH)
		n = BATCH;
	w->base = next;
	w->pos = 0;
	w->len = n;
	st->batches++;
	w->single = bpf_probe_read_kernel(w->heads, n * 8, (void *)(w->table + next * 8)) != 0;
	return 0;
}

/* The next bucket of a batch read one head at a time: its chain, or it counted unreadable. */
static __always_inline void read_one(struct walk *w, struct stats *st)
{
	__u64 head = 0;
	__u64 b = w->base + w->pos;
	w->pos++;
	if (bpf_probe_read_kernel(&head, sizeof(head), (void *)(w->table + b * 8))) {
		st->unreadable++;
		return;
	}
	/* hlist_bl_first(): bit 0 is the bucket's lock. */
	w->node = head & ~1ULL;
	w->bucket = b;
	w->chain = 0;
}

/* Looks through the batch from pos for a bucket with a chain: it is next, empty ones are done. */
static __always_inline void find_chain(struct walk *w)
{
	for (int k = 0; k < BATCH; k++) {
		__u64 p = w->pos;
		if (p >= w->len)
			return;
		w->pos = p + 1;
		/* hlist_bl_first(): bit 0 is the bucket's lock. */
		__u64 head = w->heads[p & (BATCH - 1)] & ~1ULL;
		if (head) {
			w->node = head;
			w->bucket = w->base + p;
			w->chain = 0;
			return;
		}
	}
}

/* One step: between chains, the next chain found (and its first dentry read); else the chain's next dentry. */
static long step(__u64 i, void *arg)
{
	struct step_ctx *c = arg;
	struct walk *w = c->w;
	struct stats *st = c->st;

	w->steps++;
	if (!w->node) {
		/* Between chains: stop where the next chain could overrun the steps or the map. */
		if (w->steps + MAX_CHAIN + 2 >= w->limit || st->created >= w->room)
			return 1;
		if (w->pos >= w->len)
			return read_batch(w, st);
		if (w->single)
			read_one(w, st);
		else
			find_chain(w);
		if (!w->node)
			return 0;
	}
	if (++w->chain > MAX_CHAIN) {
		st->chains_cut++;
		w->node = 0;
		return 0;
	}
	if (w->node < KERNEL_MIN || (w->node & 7)) {
		st->bad_pointer++;
		w->node = 0;
		return 0;
	}
	__u64 o_hash = bpf_core_field_offset(struct dentry, d_hash);
	__u64 o_next = o_hash + bpf_core_field_offset(struct hlist_bl_node, next);
	__u64 o_name = bpf_core_field_offset(struct dentry, d_name);
	__u64 o_nhash = o_name + bpf_core_field_offset(struct qstr, hash);
	__u64 o_parent = bpf_core_field_offset(struct dentry, d_parent);
	__u64 o_inode = bpf_core_field_offset(struct dentry, d_inode);
	__u64 o_sb = bpf_core_field_offset(struct dentry, d_sb);
	/* Up to the end of the last field read, no further: the object may end a page. */
	__u64 len = o_sb + 8;
	if (o_inode + 8 > len)
		len = o_inode + 8;
	if (o_parent + 8 > len)
		len = o_parent + 8;
	if (o_nhash + 4 > len)
		len = o_nhash + 4;
	if (o_next + 8 > len)
		len = o_next + 8;
	if (len > DENTRY_READ) {
		st->unreadable++;
		w->node = 0;
		return 1;
	}
	if (bpf_probe_read_kernel(w->d.b, len, (void *)(w->node - o_hash))) {
		st->unreadable++;
		w->node = 0;
		return 0;
	}
	/* d_hash() in fs/dcache.c: the bucket is the name hash's top bits. */
	if ((__u64)(at32(w, o_nhash) >> w->shift) != w->bucket) {
		st->wrong_bucket++;
		w->node = 0;
		return 0;
	}
	struct dir_key k = { .sb = at64(w, o_sb), .parent = at64(w, o_parent) };
	int negative = at64(w, o_inode) == 0;
	w->node = at64(w, o_next);
	if (k.sb < KERNEL_MIN || k.parent < KERNEL_MIN) {
		st->bad_pointer++;
		return 0;
	}
	struct dir_counts *dc = bpf_map_lookup_elem(&dirs, &k);
	if (dc) {
		if (negative)
			dc->negative++;
		else
			dc->positive++;
	} else {
		struct dir_counts n = { .positive = !negative, .negative = negative };
		if (bpf_map_update_elem(&dirs, &k, &n, BPF_NOEXIST)) {
			st->unrecorded++;
			return 0;
		}
		st->created++;
	}
	st->walked++;
	return 0;
}

/*
 * args[0]: the table's address; args[1]: the first bucket; args[2]: how
 * many; args[3]: the hash shift (32 - log2(buckets)); args[4]: the map
 * entries allowed before it stops; args[5]: the steps allowed (at most
 * MAX_STEPS; 0: MAX_STEPS); args[6]: the heads read at once (1 to BATCH;
 * 0: BATCH). Returns the buckets walked: fewer than asked when it stopped
 * at a chain's end to keep within its steps or to let user space drain
 * `dirs`.
 */
SEC("raw_tp")
int dentrylab_walk(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 zero = 0;
	struct walk *w = bpf_map_lookup_elem(&state, &zero);
	struct stats *st = bpf_map_lookup_elem(&stats, &zero);
	if (!w || !st)
		return 0;
	__u64 first = ctx->args[1];
	__u64 limit = ctx->args[5];
	__u64 batch = ctx->args[6];
	w->table = ctx->args[0];
	w->end = first + ctx->args[2];
	w->shift = ctx->args[3] & 31;
	w->room = ctx->args[4];
	w->limit = limit && limit < MAX_STEPS ? limit : MAX_STEPS;
	w->batch = batch && batch < BATCH ? batch : BATCH;
	w->base = first;
	w->len = 0;
	w->pos = 0;
	w->single = 0;
	w->node = 0;
	w->steps = 0;
	struct step_ctx c = { .w = w, .st = st };
	bpf_loop(MAX_STEPS, step, &c, 0);
	__u64 done = w->base + w->pos - first;
	st->buckets += done;
	st->runs++;
	st->steps += w->steps;
	if (w->steps > st->max_steps)
		st->max_steps = w->steps;
	return done;
}

/* args[0]: a kernel address; args[1]: bytes (at most 4096) copied into `mem`. Returns 0 or -errno. */
SEC("raw_tp")
int dentrylab_read(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 zero = 0;
	struct mem_buf *b = bpf_map_lookup_elem(&mem, &zero);
	__u64 len = ctx->args[1];
	if (!b)
		return -22;
	if (len > MEM_LEN)
		return -7;
	return bpf_probe_read_kernel(b->b, len, (void *)ctx->args[0]);
}

/*
 * args[0]: a file descriptor of the calling process. Writes into `mem` its
 * dentry's address, the dentry's d_hash.pprev (for the first dentry of a
 * chain: the address of its bucket in dentry_hashtable) and its name hash.
 * Returns 0 or -errno.
 */
SEC("raw_tp")
int dentrylab_locate(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 zero = 0;
	struct mem_buf *b = bpf_map_lookup_elem(&mem, &zero);
	struct task_struct *t = (void *)bpf_get_current_task();
	struct file **fds = BPF_CORE_READ(t, files, fdt, fd);
	struct file *f = 0;
	if (!b || !fds)
		return -22;
	if (bpf_probe_read_kernel(&f, sizeof(f), fds + (ctx->args[0] & 0xffff)) || !f)
		return -9;
	struct dentry *d = BPF_CORE_READ(f, f_path.dentry);
	if (!d)
		return -2;
	__u64 *out = (__u64 *)b->b;
	out[0] = (__u64)d;
	out[1] = (__u64)BPF_CORE_READ((struct hlist_bl_node___pp *)&d->d_hash, pprev);
	out[2] = BPF_CORE_READ(d, d_name.hash);
	return 0;
}
