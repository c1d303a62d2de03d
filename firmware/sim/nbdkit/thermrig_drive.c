/* thermrig_drive: the virtual drive's data path as an nbdkit plugin (docs/virtual-drive.md).
 *
 *   nbdkit --unix SOCK --foreground --exit-with-parent --threads 32 thermrig_drive.so shm=FILE \
 *          [data=STORE data-cap=BYTES]
 *
 * The drive model (host/thermrig/virtual_drive/drive_model.py) decides state and policy once per
 * plant tick and writes the figures of the power state it is in into the shared file FILE (the
 * "figures", under a sequence lock); this plugin times every request from them exactly as
 * DriveModel.service() and DriveModel.serve() do, holds each request until the drive's pipeline
 * completes it, and adds the work it did to the "accounts" the model reads back each tick. The LBA
 * map (one byte per 64 KiB chunk) lives in the same file after the header, so the model's fill and
 * format and this plugin's writes, TRIMs and block status see one map. The layout is mirrored by
 * host/thermrig/virtual_drive/exchange.py.
 *
 * Without data=, reads return zeros and written data is dropped. With data=STORE the drive keeps what is
 * written in STORE, a sparse file the size of the export: writes go into it, reads come from it, TRIM
 * and write-zeroes punch holes in it, so it holds what the workload wrote and not yet trimmed. Past
 * data-cap bytes held, a write that needs new space is refused with ENOSPC and a line in nbdkit's log
 * (counted for the model: accounts.refused_writes); overwrites of data already held go on. A completed
 * write is in the kernel's page cache, which outlives this process: no volatile cache to flush. */
#define _GNU_SOURCE
#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

#define MAGIC 0x3156524444524854ULL /* "THRDDRV1" little-endian */
#define CHUNK 65536ULL
#define HEADER_BYTES 4096
#define SECTOR 512
#define MAX_REQUEST (32u << 20)
#define ZERO_PAGES_MIN (1u << 20) /* smaller reads are memset: cheaper than remapping their pages */
#define TRIM_S 20e-6          /* a deallocate touches only the mapping table: DriveModel.TRIM_S */
#define TURNAROUND_MAX_S 5e-3 /* a longer gap between a reply and the next request is idle time */

/* Written by the model each tick (under seq), read here per request. */
struct figures {
  double scale;           /* wire rate per modelled rate */
  double rand_read_iops;  /* profile */
  double seq_read_bps;
  double qd1_read_iops;
  double rand_write_iops;
  double gc_write_iops; /* random writes once garbage collection paces them (this tick's fill) */
  double seq_write_bps;
  double qd1_write_iops;
  double cap_read; /* the power state's share of the active power, reads and writes */
  double cap_write;
  double catch_up_s; /* how far behind the wire clock an idle pipeline may restart */
  uint64_t steady;   /* no fresh NAND left: random writes wait for garbage collection */
  uint64_t reset;    /* bumped by the model: the pipeline and the streams start afresh */
};

/* Cumulative, written here under the lock, read by the model each tick. */
struct accounts {
  double busy_read; /* full-speed seconds of work, at the drive's scale */
  double busy_write;
  double bytes_read; /* at the drive's scale */
  double bytes_written;
  double fresh;            /* bytes on fresh NAND */
  uint64_t mapped_chunks;  /* chunks set in the map */
  uint64_t requests;       /* reads and writes served */
  double last_occupancy;   /* the last read's or write's service, drive scale (tests) */
  double last_latency;
  uint64_t replies;        /* requests the plugin completed (TRIMs and write-zeroes too) */
  uint64_t refused_writes; /* writes refused: the data store held data-cap bytes */
  double idle_s; /* wall seconds connections left the drive with nothing of theirs in flight, between
                  * their requests (a client's turnaround, a pause, a loaded host's stall) */
  double starved_s; /* wall seconds the drive had nothing in flight from any connection, in gaps of
                     * TURNAROUND_MAX_S or more from a reply to the next request (no client's turnaround:
                     * a host that sent nothing, as fio not scheduled on a loaded machine, or a pause) */
};

struct header {
  uint64_t magic;
  uint64_t size;
  uint64_t chunks;
  uint64_t seq; /* odd while the model writes the figures */
  struct figures fig;
  uint8_t pad1[256 - 32 - sizeof(struct figures)];
  struct accounts acc;
};

_Static_assert(sizeof(struct figures) == 104, "figures layout");
_Static_assert(sizeof(struct header) <= HEADER_BYTES, "header layout");
_Static_assert(sizeof(struct header) <= 1024 && 1024 + 8 <= HEADER_BYTES, "lateness slot (LATENESS_AT)");

static const char *shm_path;
static const char *data_path;      /* data=: the sparse file that keeps what is written */
static int64_t data_cap = INT64_MAX; /* data-cap=: bytes the store may hold */
static int data_fd = -1;
static uint64_t pending; /* bytes of writes between their cap check and their pwrite */
static struct header *hdr;
static uint8_t *lba_map;
static uint64_t size;
static size_t mapping_bytes;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static double free_at = -INFINITY; /* wire time the pipeline takes its next request */
static int64_t next_write = -1, next_read = -1;
static uint64_t seen_reset;
static unsigned in_flight; /* requests taken and not yet replied to, every connection */
static double drive_empty_at = -INFINITY; /* when the drive's last request in flight was handed over */

#define RING 64 /* >= the threads per connection: replies a connection can have outstanding */

/* A reply of a connection not yet followed by a request: when the drive completed it on its own
 * timeline (virtual), and when the plugin handed it to nbdkit (real, for the idle gap). */
struct reply {
  double due, at;
};

struct handle {
  struct reply replies[RING]; /* oldest first */
  unsigned head, n;
  unsigned in_flight; /* this connection's requests taken and not yet replied to */
  double empty_at;    /* when its last request in flight was handed over; -INFINITY before its first */
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_until(double t) {
  static __thread int slack_set;
  if (!slack_set) { /* the default 50 us of timer slack is most of a 4 KiB read's service */
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    slack_set = 1;
  }
  if (!isfinite(t) || t <= now_s())
    return;
  struct timespec ts = {.tv_sec = (time_t)t};
  ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
}

static struct figures read_figures(void) {
  struct figures f;
  for (;;) {
    uint64_t s1 = __atomic_load_n(&hdr->seq, __ATOMIC_ACQUIRE);
    if (s1 & 1)
      continue;
    memcpy(&f, &hdr->fig, sizeof f);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&hdr->seq, __ATOMIC_RELAXED) == s1)
      return f;
  }
}

static void store(double *field, double value) { __atomic_store(field, &value, __ATOMIC_RELAXED); }

/* Map the chunks [offset, offset + length) touches; returns the bytes newly mapped (LbaMap.write). */
static uint64_t map_write(uint64_t offset, uint64_t length) {
  uint64_t a = offset / CHUNK, b = (offset + length + CHUNK - 1) / CHUNK, n = 0;
  if (b > hdr->chunks)
    b = hdr->chunks;
  for (uint64_t i = a; i < b; i++)
    if (!lba_map[i]) {
      lba_map[i] = 1;
      n++;
    }
  __atomic_add_fetch(&hdr->acc.mapped_chunks, n, __ATOMIC_RELAXED);
  return n * CHUNK;
}

/* Unmap the chunks [offset, offset + length) covers whole; to the end, the last partial one too. */
static void map_trim(uint64_t offset, uint64_t length) {
  uint64_t a = (offset + CHUNK - 1) / CHUNK, b = (offset + length) / CHUNK, n = 0;
  if (offset + length >= size || b > hdr->chunks)
    b = hdr->chunks;
  for (uint64_t i = a; i < b; i++)
    if (lba_map[i]) {
      lba_map[i] = 0;
      n++;
    }
  __atomic_sub_fetch(&hdr->acc.mapped_chunks, n, __ATOMIC_RELAXED);
}

/* One request arrived at `now`: its service from this tick's figures, the work it did counted, and
 * the wire time at which the drive completes it (*due, on the drive's own timeline, which may lie in
 * the past while the drive catches up with a late host); returns when its reply goes out:
 * max(now, *due). kind: 0 read, 1 write, 2 trim or write-zeroes. */
static double schedule(struct handle *h, int kind, uint64_t offset, uint32_t count, double now, double *due) {
  pthread_mutex_lock(&lock);
  struct figures f = read_figures();
  if (f.reset != seen_reset) {
    seen_reset = f.reset;
    free_at = -INFINITY;
    next_write = next_read = -1;
  }
  /* A client that keeps its queue full sends one request per reply: pair each request with the
   * oldest reply of its connection not yet followed by one. The gap from that reply's due time is
   * this machine's turnaround (a late wake-up, nbdkit, libnbd, fio), where a real host spends a few
   * microseconds: the request is taken as sent at that due time, on the drive's timeline, so a
   * late reply or a late request costs the stream nothing (up to catch_up_s behind the wire clock).
   * A gap of TURNAROUND_MAX_S from the reply's real hand-over is idle time: the stream starts afresh. */
  while (h->n > 0 && now - h->replies[h->head].at >= TURNAROUND_MAX_S) {
    h->head = (h->head + 1) % RING;
    h->n--;
  }
  double sent = now;
  if (h->n > 0) {
    sent = fmax(h->replies[h->head].due, now - f.catch_up_s);
    h->head = (h->head + 1) % RING;
    h->n--;
  }
  int busy = in_flight > 0;
  if (!busy && isfinite(drive_empty_at) && now - drive_empty_at >= TURNAROUND_MAX_S)
    store(&hdr->acc.starved_s, hdr->acc.starved_s + (now - drive_empty_at));
  in_flight++;
  if (h->in_flight++ == 0 && isfinite(h->empty_at))
    store(&hdr->acc.idle_s, hdr->acc.idle_s + (now - h->empty_at));
  double occupancy, latency, len = (double)count, weight = 1.0 / f.scale;
  struct accounts *acc = &hdr->acc;
  if (kind == 2) { /* a deallocate: no NAND work, no power (DriveModel.trim) */
    map_trim(offset, count);
    occupancy = latency = TRIM_S;
  } else {
    int write = kind == 1;
    /* DriveModel.serve: sequential when it continues the last write (a write) or the last read
     * with no write between (a read, from the read-ahead buffer). */
    int sequential = (int64_t)offset == (write ? next_write : next_read);
    double full;
    if (write) {
      double iops = f.steady && !sequential ? f.gc_write_iops : f.rand_write_iops;
      full = 1.0 / fmin(iops, f.seq_write_bps / len);
      latency = 1.0 / f.qd1_write_iops + fmax(0.0, len - 4096.0) / f.seq_write_bps;
    } else {
      full = 1.0 / fmin(f.rand_read_iops, f.seq_read_bps / len);
      latency = 1.0 / f.qd1_read_iops + fmax(0.0, len - 4096.0) / f.seq_read_bps;
      if (sequential)
        latency = full;
    }
    latency = fmax(latency, full);
    occupancy = full / fmax(write ? f.cap_write : f.cap_read, 1e-6);
    if (write) {
      next_write = (int64_t)(offset + count);
      next_read = -1;
      double fresh = (double)map_write(offset, count);
      store(&acc->fresh, acc->fresh + (sequential ? fresh : len * weight));
      store(&acc->bytes_written, acc->bytes_written + len * weight);
      store(&acc->busy_write, acc->busy_write + full * weight);
    } else {
      next_read = (int64_t)(offset + count);
      store(&acc->bytes_read, acc->bytes_read + len * weight);
      store(&acc->busy_read, acc->busy_read + full * weight);
    }
    store(&acc->last_occupancy, occupancy);
    store(&acc->last_latency, latency);
    __atomic_add_fetch(&acc->requests, 1, __ATOMIC_RELAXED);
  }
  /* The pipeline: a request starts when the one before it is through, or when it arrived, or when a
   * host with no turnaround would have sent it (at the reply it follows). While requests are in
   * flight a pipeline the host left short restarts at most catch_up_s behind the wire clock (a loaded
   * host's late requests served at the drive's pace, not lost); a drive with nothing in flight and no
   * reply just before starts afresh. So a burst after idle gets the ceiling and no more, and in any
   * interval of length T the drive completes at most (T + catch_up_s) seconds of work at its ceiling. */
  double start = fmax(free_at, busy ? fmin(sent, now - f.catch_up_s) : sent);
  free_at = start + occupancy / f.scale;
  *due = fmax(sent + latency / f.scale, free_at);
  pthread_mutex_unlock(&lock);
  return fmax(now, *due);
}

/* The request the drive completed at `due` (its timeline) is handed to nbdkit at `at` (a loaded
 * machine's late wake-up counts into the turnaround, not into the drive's time). */
static void replied(struct handle *h, double due, double at) {
  pthread_mutex_lock(&lock);
  if (h->n == RING) { /* forget the oldest */
    h->head = (h->head + 1) % RING;
    h->n--;
  }
  h->replies[(h->head + h->n) % RING] = (struct reply){due, at};
  h->n++;
  if (--in_flight == 0)
    drive_empty_at = at;
  if (--h->in_flight == 0)
    h->empty_at = at;
  __atomic_add_fetch(&hdr->acc.replies, 1, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&lock);
}

static void zeros(uint8_t *buf, size_t count);

/* --- the data store --------------------------------------------------------------------------- */

/* The store, the export's size, sparse; kept as it is when the server starts again after a death. */
static int open_store(void) {
  data_fd = open(data_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (data_fd < 0) {
    nbdkit_error("open the data store %s: %m", data_path);
    return -1;
  }
  struct stat st;
  if (fstat(data_fd, &st) < 0 || (st.st_size != (off_t)size && ftruncate(data_fd, (off_t)size) < 0)) {
    nbdkit_error("size the data store %s: %m", data_path);
    return -1;
  }
  /* TRIM and write-zeroes punch holes: a file system that cannot is refused now, not at the first TRIM */
  if (fallocate(data_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)size - SECTOR, SECTOR) < 0) {
    nbdkit_error("the data store %s: its file system cannot punch holes (%m)", data_path);
    return -1;
  }
  return 0;
}

static int store_error(const char *what, uint32_t count, uint64_t offset) {
  int e = errno;
  nbdkit_error("data store %s, %u bytes at %" PRIu64 ": %s", what, (unsigned)count, offset, strerror(e));
  nbdkit_set_error(e);
  return -1;
}

static int data_read(uint8_t *buf, uint32_t count, uint64_t offset) {
  off_t data = lseek(data_fd, (off_t)offset, SEEK_DATA);
  if ((data < 0 && errno == ENXIO) || (data >= 0 && (uint64_t)data >= offset + count)) {
    zeros(buf, count); /* a hole throughout: no copy of zeros from the file system */
    return 0;
  }
  while (count > 0) {
    ssize_t r = pread(data_fd, buf, count, (off_t)offset);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return store_error("read", count, offset);
    if (r == 0) { /* past the store's end: cannot happen while it has the export's size */
      memset(buf, 0, count);
      break;
    }
    buf += r;
    count -= (uint32_t)r;
    offset += (uint64_t)r;
  }
  return 0;
}

/* Whether [offset, offset + count) is all held already (an overwrite needs no new space). */
static int held(uint32_t count, uint64_t offset) {
  off_t hole = lseek(data_fd, (off_t)offset, SEEK_HOLE);
  return hole >= 0 && (uint64_t)hole >= offset + count;
}

static int data_write(const uint8_t *buf, uint32_t count, uint64_t offset) {
  uint64_t reserved = __atomic_add_fetch(&pending, count, __ATOMIC_RELAXED);
  struct stat st;
  if (fstat(data_fd, &st) < 0) {
    __atomic_sub_fetch(&pending, count, __ATOMIC_RELAXED);
    return store_error("stat", count, offset);
  }
  uint64_t kept = (uint64_t)st.st_blocks * 512;
  if (kept + reserved > (uint64_t)data_cap && !held(count, offset)) {
    __atomic_sub_fetch(&pending, count, __ATOMIC_RELAXED);
    uint64_t n = __atomic_add_fetch(&hdr->acc.refused_writes, 1, __ATOMIC_RELAXED);
    if (n == 1 || n % 4096 == 0)
      nbdkit_error("the virtual drive's data store is full: %" PRIu64 " bytes kept, its cap %" PRId64
                   " (keep-data); write of %u bytes at %" PRIu64 " refused with ENOSPC (%" PRIu64 " so far)",
                   kept, data_cap, (unsigned)count, offset, n);
    nbdkit_set_error(ENOSPC);
    return -1;
  }
  int rc = 0;
  while (count > 0) {
    ssize_t w = pwrite(data_fd, buf, count, (off_t)offset);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0) {
      rc = store_error("write", count, offset);
      break;
    }
    buf += w;
    count -= (uint32_t)w;
    offset += (uint64_t)w;
    __atomic_sub_fetch(&pending, (uint64_t)w, __ATOMIC_RELAXED);
  }
  __atomic_sub_fetch(&pending, count, __ATOMIC_RELAXED);
  return rc;
}

/* TRIM and write-zeroes: the range reads as zeros from now on, and the store gives its space back. */
static int data_punch(uint32_t count, uint64_t offset) {
  if (fallocate(data_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)offset, count) < 0)
    return store_error("punch", count, offset);
  return 0;
}

static int aligned(uint32_t count, uint64_t offset) {
  if (count % SECTOR == 0 && offset % SECTOR == 0)
    return 1;
  nbdkit_error("request of %u bytes at %llu: not whole %d-byte sectors", (unsigned)count,
               (unsigned long long)offset, SECTOR);
  nbdkit_set_error(EINVAL);
  return 0;
}

/* --- lateness: how much later than the drive's timeline said a reply went out --------------------
 * The host's record of itself: a thread woken late on a loaded machine. The worst since the model last
 * read it, at LATENESS_AT in the header (its own bytes, apart from the figures and the accounts), as
 * the bits of a double raised by compare-and-swap; the model reads and clears it once a second. */
#define LATENESS_AT 1024

static void note_lateness(double late_s) {
  uint64_t *slot = (uint64_t *)((uint8_t *)hdr + LATENESS_AT);
  uint64_t seen = __atomic_load_n(slot, __ATOMIC_RELAXED), bits;
  double worst;
  do {
    memcpy(&worst, &seen, sizeof worst);
    if (!(late_s > worst))
      return;
    memcpy(&bits, &late_s, sizeof bits);
  } while (!__atomic_compare_exchange_n(slot, &seen, bits, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
}

static int serve(void *handle, int kind, uint32_t count, uint64_t offset) {
  struct handle *h = handle;
  double due, reply = schedule(h, kind, offset, count, now_s(), &due);
  sleep_until(reply);
  double at = now_s();
  note_lateness(at - reply);
  replied(h, due, at);
  return 0;
}

/* --- nbdkit callbacks ------------------------------------------------------------------------- */

static int drive_config(const char *key, const char *value) {
  if (strcmp(key, "shm") == 0) {
    shm_path = value;
    return 0;
  }
  if (strcmp(key, "data") == 0) {
    data_path = value;
    return 0;
  }
  if (strcmp(key, "data-cap") == 0) {
    data_cap = nbdkit_parse_size(value);
    return data_cap < 0 ? -1 : 0;
  }
  nbdkit_error("unknown parameter '%s' (thermrig_drive takes shm=FILE [data=STORE data-cap=SIZE])", key);
  return -1;
}

static int drive_config_complete(void) {
  if (shm_path == NULL) {
    nbdkit_error("thermrig_drive needs shm=FILE (the exchange file the drive model wrote)");
    return -1;
  }
  return 0;
}

static int drive_get_ready(void) {
  int fd = open(shm_path, O_RDWR);
  if (fd < 0) {
    nbdkit_error("open %s: %m", shm_path);
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) < 0 || st.st_size < HEADER_BYTES) {
    nbdkit_error("%s: too short for the exchange header", shm_path);
    close(fd);
    return -1;
  }
  mapping_bytes = (size_t)st.st_size;
  void *p = mmap(NULL, mapping_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    nbdkit_error("mmap %s: %m", shm_path);
    return -1;
  }
  hdr = p;
  if (hdr->magic != MAGIC || HEADER_BYTES + hdr->chunks > mapping_bytes ||
      hdr->chunks != (hdr->size + CHUNK - 1) / CHUNK) {
    nbdkit_error("%s: not a thermrig drive exchange file", shm_path);
    return -1;
  }
  size = hdr->size;
  lba_map = (uint8_t *)p + HEADER_BYTES;
  seen_reset = read_figures().reset;
  return data_path == NULL ? 0 : open_store();
}

static void drive_unload(void) {
  if (hdr != NULL)
    munmap(hdr, mapping_bytes);
  if (data_fd >= 0)
    close(data_fd);
}

static void *drive_open(int readonly) {
  (void)readonly;
  const char *name = nbdkit_export_name();
  if (name != NULL && name[0] != '\0') { /* one drive, the default export "" */
    nbdkit_error("no export named '%s': this server has the default export \"\" only", name);
    return NULL;
  }
  struct handle *h = calloc(1, sizeof *h);
  if (h == NULL)
    nbdkit_error("calloc: %m");
  else
    h->empty_at = -INFINITY; /* no request yet: the time before its first is not the drive's idle */
  return h;
}

static void drive_close(void *handle) { free(handle); }

static int64_t drive_get_size(void *handle) {
  (void)handle;
  return (int64_t)size;
}

static int one(void *handle) {
  (void)handle;
  return 1;
}

static int zero_(void *handle) {
  (void)handle;
  return 0;
}

static int fua_native(void *handle) {
  (void)handle;
  return NBDKIT_FUA_NATIVE; /* no volatile cache: every write is already durable */
}

static int drive_block_size(void *handle, uint32_t *minimum, uint32_t *preferred, uint32_t *maximum) {
  (void)handle;
  *minimum = SECTOR;
  *preferred = 4096;
  *maximum = MAX_REQUEST;
  return 0;
}

/* Zeros into buf. For large reads, whole pages of nbdkit's (private, anonymous) buffer are dropped
 * instead of written: they read back as zeros through the kernel's zero page, so a large reply that
 * waits for the drive or for a client holds no memory and costs no memset. */
static void zeros(uint8_t *buf, size_t count) {
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t a = ((uintptr_t)buf + page - 1) & ~(page - 1), b = ((uintptr_t)buf + count) & ~(page - 1);
  if (count >= ZERO_PAGES_MIN && madvise((void *)a, b - a, MADV_DONTNEED) == 0) {
    memset(buf, 0, a - (uintptr_t)buf);
    memset((void *)b, 0, (uintptr_t)buf + count - b);
    return;
  }
  memset(buf, 0, count);
}

/* The data moves when the request arrives, then the request waits for the drive: a read holds what
 * was written before it arrived, a write is readable by every connection once it is answered. */
static int drive_pread(void *handle, void *buf, uint32_t count, uint64_t offset, uint32_t flags) {
  (void)flags;
  if (!aligned(count, offset))
    return -1;
  if (data_fd < 0)
    zeros(buf, count); /* first: the buffer holds no memory while the request waits for the drive */
  else if (data_read(buf, count, offset) < 0)
    return -1;
  return serve(handle, 0, count, offset);
}

static int drive_pwrite(void *handle, const void *buf, uint32_t count, uint64_t offset, uint32_t flags) {
  (void)flags; /* FUA: a completed write is already in the store (no volatile cache) */
  if (!aligned(count, offset))
    return -1;
  if (data_fd >= 0 && data_write(buf, count, offset) < 0)
    return -1;
  return serve(handle, 1, count, offset);
}

static int drive_trim(void *handle, uint32_t count, uint64_t offset, uint32_t flags) {
  (void)flags;
  if (!aligned(count, offset))
    return -1;
  if (data_fd >= 0 && data_punch(count, offset) < 0)
    return -1;
  return serve(handle, 2, count, offset);
}

static int drive_zero(void *handle, uint32_t count, uint64_t offset, uint32_t flags) {
  (void)flags; /* deallocated LBAs read as zeros: a write-zeroes is a deallocate, fast or not */
  if (!aligned(count, offset))
    return -1;
  if (data_fd >= 0 && data_punch(count, offset) < 0)
    return -1;
  return serve(handle, 2, count, offset);
}

static int drive_flush(void *handle, uint32_t flags) {
  (void)handle;
  (void)flags;
  return 0; /* no volatile cache to write back */
}

/* Block status from the LBA map: mapped chunks are data, unmapped ones a hole that reads as zeros. */
static int drive_extents(void *handle, uint32_t count, uint64_t offset, uint32_t flags,
                         struct nbdkit_extents *extents) {
  (void)handle;
  uint64_t end = offset + count;
  while (offset < end) {
    uint64_t i = offset / CHUNK;
    uint8_t mapped = __atomic_load_n(&lba_map[i], __ATOMIC_RELAXED);
    uint64_t j = i + 1;
    while (j * CHUNK < end && j < hdr->chunks && __atomic_load_n(&lba_map[j], __ATOMIC_RELAXED) == mapped)
      j++;
    uint64_t stop = j * CHUNK < end ? j * CHUNK : end;
    if (nbdkit_add_extent(extents, offset, stop - offset, mapped ? 0 : NBDKIT_EXTENT_HOLE | NBDKIT_EXTENT_ZERO) < 0)
      return -1;
    if (flags & NBDKIT_FLAG_REQ_ONE)
      break;
    offset = stop;
  }
  return 0;
}

static struct nbdkit_plugin plugin = {
    .name = "thermrig-drive",
    .version = "1",
    .longname = "thermrig virtual drive",
    .description = "the thermrig drive model's data path: service times, rate ceilings, LBA map",
    .config = drive_config,
.config_help = "shm=FILE         the exchange file the drive model wrote (required)\n"
                   "data=STORE       keep written data in STORE, a sparse file (default: drop it, read zeros)\n"
                   "data-cap=SIZE    refuse writes needing new space past SIZE bytes held (ENOSPC)",
    .config_complete = drive_config_complete,
    .magic_config_key = "shm",
    .get_ready = drive_get_ready,
    .unload = drive_unload,
    .open = drive_open,
    .close = drive_close,
    .get_size = drive_get_size,
    .block_size = drive_block_size,
    .can_write = one,
    .can_flush = one,
    .is_rotational = zero_,
    .can_trim = one,
    .can_zero = one,
    .can_fast_zero = one,
    .can_fua = fua_native,
    .can_multi_conn = one,
    .can_extents = one,
    .pread = drive_pread,
    .pwrite = drive_pwrite,
    .flush = drive_flush,
    .trim = drive_trim,
    .zero = drive_zero,
    .extents = drive_extents,
    .errno_is_preserved = 0,
};

NBDKIT_REGISTER_PLUGIN(plugin)
