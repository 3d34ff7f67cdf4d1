/*
 * A stand-in for the CUDA driver library, for machines without an NVIDIA GPU.
 *
 * It implements the driver entry points stagehand's CUDA backend calls, with
 * "device memory" in host memory. Streams are real: each has a thread that
 * runs its queued copies, event records and event waits in order, and every
 * copy first sleeps a little, so work queued on a stream really finishes
 * later than the call that queued it. Code that reuses a staging buffer
 * before its copy is done, or reads a result before waiting, gets wrong bytes.
 *
 * Device memory is capped (STAGEHAND_STAND_IN_MIB, default 1024) so that
 * out-of-memory can be tested. STAGEHAND_STAND_IN_FAIL=ENTRY:N makes the Nth
 * call (counted from 1, process-wide) of the entry point ENTRY fail with
 * CUDA_ERROR_UNKNOWN, so that a failure in the middle of a sequence of calls
 * can be tested (only the entry points that call fail_now() take part). scripts/test builds this file and runs the
 * CUDA tests against it; it is not used anywhere else.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

enum {
    OK = 0,
    INVALID_VALUE = 1,
    OUT_OF_MEMORY = 2,
    INVALID_DEVICE = 101,
    INVALID_HANDLE = 400,
    NOT_READY = 600,
    UNKNOWN = 999,
};

/* ---- failures on demand (STAGEHAND_STAND_IN_FAIL=ENTRY:N) ---- */

static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long fail_calls;

/* Whether this call of `entry` is the one asked to fail. */
static int fail_now(const char *entry) {
    const char *spec = getenv("STAGEHAND_STAND_IN_FAIL");
    if (!spec) return 0;
    const char *colon = strchr(spec, ':');
    size_t n = strlen(entry);
    if (!colon || (size_t)(colon - spec) != n || strncmp(spec, entry, n) != 0) return 0;
    unsigned long nth = strtoul(colon + 1, NULL, 10);
    pthread_mutex_lock(&fail_lock);
    unsigned long call = ++fail_calls;
    pthread_mutex_unlock(&fail_lock);
    return call == nth;
}

/* ---- device memory accounting ---- */

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t mem_used;

static size_t mem_total(void) {
    const char *mib = getenv("STAGEHAND_STAND_IN_MIB");
    size_t n = mib ? (size_t)strtoull(mib, NULL, 10) : 1024;
    return (n ? n : 1024) << 20;
}

/* Each allocation carries its size in front of it. */
typedef struct {
    size_t size;
    size_t pad;
} header;

/* ---- events ---- */

typedef struct event {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    unsigned long recorded;  /* records queued */
    unsigned long completed; /* records a stream has reached */
} event;

static void event_reach(event *e, unsigned long gen) {
    pthread_mutex_lock(&e->lock);
    if (gen > e->completed) e->completed = gen;
    pthread_cond_broadcast(&e->cond);
    pthread_mutex_unlock(&e->lock);
}

static void event_wait(event *e, unsigned long gen) {
    pthread_mutex_lock(&e->lock);
    while (e->completed < gen) pthread_cond_wait(&e->cond, &e->lock);
    pthread_mutex_unlock(&e->lock);
}

/* ---- streams: a thread running queued operations in order ---- */

enum op_kind { OP_COPY, OP_RECORD, OP_WAIT };

typedef struct op {
    enum op_kind kind;
    void *dst;
    const void *src;
    size_t n;
    event *ev;
    unsigned long gen;
    struct op *next;
} op;

typedef struct stream {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    op *head, *tail;
    int busy;
    int closing;
    pthread_t thread;
} stream;

static void run_op(op *o) {
    switch (o->kind) {
    case OP_COPY: {
        /* Take a while, as a bus would: 20 us plus 1 us per 64 KiB. */
        struct timespec t = {0, (long)(20000 + (o->n >> 16) * 1000)};
        nanosleep(&t, NULL);
        memcpy(o->dst, o->src, o->n);
        break;
    }
    case OP_RECORD:
        event_reach(o->ev, o->gen);
        break;
    case OP_WAIT:
        event_wait(o->ev, o->gen);
        break;
    }
}

static void *stream_main(void *arg) {
    stream *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->head && !s->closing) pthread_cond_wait(&s->cond, &s->lock);
        if (!s->head) break;
        op *o = s->head;
        s->head = o->next;
        if (!s->head) s->tail = NULL;
        s->busy = 1;
        pthread_mutex_unlock(&s->lock);
        run_op(o);
        free(o);
        pthread_mutex_lock(&s->lock);
        s->busy = 0;
        pthread_cond_broadcast(&s->cond);
    }
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free(s);
    return NULL;
}

static CUresult enqueue(stream *s, op o) {
    if (!s) return INVALID_HANDLE; /* the legacy stream is not used here */
    op *copy = malloc(sizeof *copy);
    if (!copy) return OUT_OF_MEMORY;
    *copy = o;
    copy->next = NULL;
    pthread_mutex_lock(&s->lock);
    if (s->tail) s->tail->next = copy;
    else s->head = copy;
    s->tail = copy;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    return OK;
}

static void stream_drain(stream *s) {
    pthread_mutex_lock(&s->lock);
    while (s->head || s->busy) pthread_cond_wait(&s->cond, &s->lock);
    pthread_mutex_unlock(&s->lock);
}

/* Every live stream, for context-wide synchronisation. */
#define MAX_STREAMS 1024
static pthread_mutex_t streams_lock = PTHREAD_MUTEX_INITIALIZER;
static stream *streams[MAX_STREAMS];

/* ---- initialisation, devices, contexts ---- */

static int primary_ctx = 1;
static __thread void *current_ctx;

CUresult cuInit(unsigned flags) { (void)flags; return OK; }
CUresult cuDriverGetVersion(int *v) { *v = 12080; return OK; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return OK; }

CUresult cuDeviceGet(CUdevice *d, int ordinal) {
    if (ordinal != 0) return INVALID_DEVICE;
    *d = 0;
    return OK;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
    (void)d;
    const char *mine = "stagehand stand-in device";
    if (len <= 0) return INVALID_VALUE;
    strncpy(name, mine, (size_t)len - 1);
    name[len - 1] = 0;
    return OK;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d) {
    (void)d;
    *bytes = mem_total();
    return OK;
}

CUresult cuDeviceGetAttribute(int *value, int attribute, CUdevice d) {
    (void)d;
    switch (attribute) {
    case 75: *value = 9; break;   /* compute capability major */
    case 76: *value = 0; break;   /* minor */
    case 115: *value = 1; break;  /* memory pools supported */
    default: *value = 0;
    }
    return OK;
}

CUresult cuDevicePrimaryCtxRetain(void **ctx, CUdevice d) {
    (void)d;
    *ctx = &primary_ctx;
    return OK;
}
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) { (void)d; return OK; }
CUresult cuCtxSetCurrent(void *ctx) { current_ctx = ctx; return OK; }
CUresult cuCtxGetCurrent(void **ctx) { *ctx = current_ctx; return OK; }

CUresult cuGetErrorString(CUresult e, const char **s) {
    (void)e;
    *s = "stand-in driver error";
    return OK;
}
CUresult cuGetErrorName(CUresult e, const char **s) {
    (void)e;
    *s = "CUDA_ERROR_STAND_IN";
    return OK;
}

/* ---- memory ---- */

CUresult cuMemAlloc_v2(CUdeviceptr *ptr, size_t bytes) {
    if (bytes == 0) return INVALID_VALUE;
    pthread_mutex_lock(&mem_lock);
    int fits = bytes <= mem_total() - mem_used;
    if (fits) mem_used += bytes;
    pthread_mutex_unlock(&mem_lock);
    if (!fits) return OUT_OF_MEMORY;
    header *h = malloc(sizeof(header) + bytes);
    if (!h) {
        pthread_mutex_lock(&mem_lock);
        mem_used -= bytes;
        pthread_mutex_unlock(&mem_lock);
        return OUT_OF_MEMORY;
    }
    h->size = bytes;
    *ptr = (CUdeviceptr)(uintptr_t)(h + 1);
    return OK;
}

CUresult cuMemFree_v2(CUdeviceptr ptr) {
    if (!ptr) return INVALID_VALUE;
    header *h = (header *)(uintptr_t)ptr - 1;
    pthread_mutex_lock(&mem_lock);
    mem_used -= h->size;
    pthread_mutex_unlock(&mem_lock);
    free(h);
    return OK;
}

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
    pthread_mutex_lock(&mem_lock);
    *total = mem_total();
    *free_bytes = *total - mem_used;
    pthread_mutex_unlock(&mem_lock);
    return OK;
}

CUresult cuMemHostAlloc(void **p, size_t bytes, unsigned flags) {
    (void)flags;
    *p = malloc(bytes);
    return *p ? OK : OUT_OF_MEMORY;
}
CUresult cuMemFreeHost(void *p) { free(p); return OK; }

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
    memcpy((void *)(uintptr_t)dst, src, n);
    return OK;
}
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
    memcpy(dst, (const void *)(uintptr_t)src, n);
    return OK;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *s) {
    op o = {OP_COPY, (void *)(uintptr_t)dst, src, n, NULL, 0, NULL};
    return enqueue(s, o);
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *s) {
    op o = {OP_COPY, dst, (const void *)(uintptr_t)src, n, NULL, 0, NULL};
    return enqueue(s, o);
}

/* ---- streams and events ---- */

CUresult cuStreamCreate(void **out, unsigned flags) {
    (void)flags;
    stream *s = calloc(1, sizeof *s);
    if (!s) return OUT_OF_MEMORY;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    if (pthread_create(&s->thread, NULL, stream_main, s)) {
        free(s);
        return OUT_OF_MEMORY;
    }
    pthread_detach(s->thread);
    pthread_mutex_lock(&streams_lock);
    for (int i = 0; i < MAX_STREAMS; i++)
        if (!streams[i]) { streams[i] = s; break; }
    pthread_mutex_unlock(&streams_lock);
    *out = s;
    return OK;
}

CUresult cuStreamSynchronize(void *s) {
    if (!s) return INVALID_HANDLE;
    stream_drain(s);
    return OK;
}

/* Queued work still runs; the stream's thread frees it afterwards. */
CUresult cuStreamDestroy_v2(void *p) {
    stream *s = p;
    if (!s) return INVALID_HANDLE;
    pthread_mutex_lock(&streams_lock);
    for (int i = 0; i < MAX_STREAMS; i++)
        if (streams[i] == s) streams[i] = NULL;
    pthread_mutex_unlock(&streams_lock);
    pthread_mutex_lock(&s->lock);
    s->closing = 1;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    return OK;
}

CUresult cuCtxSynchronize(void) {
    pthread_mutex_lock(&streams_lock);
    for (int i = 0; i < MAX_STREAMS; i++)
        if (streams[i]) stream_drain(streams[i]);
    pthread_mutex_unlock(&streams_lock);
    return OK;
}

CUresult cuEventCreate(void **out, unsigned flags) {
    (void)flags;
    if (fail_now("cuEventCreate")) return UNKNOWN;
    event *e = calloc(1, sizeof *e);
    if (!e) return OUT_OF_MEMORY;
    pthread_mutex_init(&e->lock, NULL);
    pthread_cond_init(&e->cond, NULL);
    *out = e;
    return OK;
}

CUresult cuEventDestroy_v2(void *p) {
    event *e = p;
    if (!e) return INVALID_HANDLE;
    /* The driver may destroy an event with a record pending; so may we,
       once that record has run. */
    event_wait(e, e->recorded);
    pthread_mutex_destroy(&e->lock);
    pthread_cond_destroy(&e->cond);
    free(e);
    return OK;
}

CUresult cuEventRecord(void *p, void *s) {
    event *e = p;
    if (!e) return INVALID_HANDLE;
    if (!s) return INVALID_HANDLE;
    pthread_mutex_lock(&e->lock);
    unsigned long gen = ++e->recorded;
    pthread_mutex_unlock(&e->lock);
    op o = {OP_RECORD, NULL, NULL, 0, e, gen, NULL};
    return enqueue(s, o);
}

CUresult cuEventQuery(void *p) {
    event *e = p;
    if (!e) return INVALID_HANDLE;
    pthread_mutex_lock(&e->lock);
    int done = e->completed >= e->recorded;
    pthread_mutex_unlock(&e->lock);
    return done ? OK : NOT_READY;
}

CUresult cuEventSynchronize(void *p) {
    event *e = p;
    if (!e) return INVALID_HANDLE;
    pthread_mutex_lock(&e->lock);
    unsigned long gen = e->recorded;
    pthread_mutex_unlock(&e->lock);
    event_wait(e, gen);
    return OK;
}

CUresult cuStreamWaitEvent(void *s, void *p, unsigned flags) {
    (void)flags;
    event *e = p;
    if (!e) return INVALID_HANDLE;
    pthread_mutex_lock(&e->lock);
    unsigned long gen = e->recorded;
    pthread_mutex_unlock(&e->lock);
    op o = {OP_WAIT, NULL, NULL, 0, e, gen, NULL};
    return enqueue(s, o);
}
