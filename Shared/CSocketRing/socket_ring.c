#include "socket_ring.h"

#ifdef __linux__
#include <errno.h>
#include <linux/io_uring.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

struct socket_ring {
    int fd;
    unsigned entries;
    unsigned queued;
    unsigned *sq_tail, *sq_mask, *sq_array;
    unsigned *cq_head, *cq_tail, *cq_mask;
    struct io_uring_sqe *sqes;
    struct io_uring_cqe *cqes;
    void *rings;
    size_t rings_size;
    size_t sqes_size;
    struct msghdr *headers;
};

static int ring_setup(unsigned entries, struct io_uring_params *params) {
    return (int)syscall(__NR_io_uring_setup, entries, params);
}

static int ring_enter(int fd, unsigned submit, unsigned complete, unsigned flags) {
    return (int)syscall(__NR_io_uring_enter, fd, submit, complete, flags, NULL, 0);
}

/// Whether a send that cannot proceed fails at once with -EAGAIN (what `socket_ring_submit` relies
/// on: a kernel that parked it instead would hold the caller's buffers past the call). Tried on a
/// socket pair whose send buffer is full.
static int ring_fails_full_sends(socket_ring *ring) {
    static char chunk[4096];
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) != 0) return 0;
    int size = 4096;
    setsockopt(pair[0], SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
    ssize_t filled;
    do {
        filled = send(pair[0], chunk, sizeof(chunk), MSG_DONTWAIT | MSG_NOSIGNAL);
    } while (filled > 0);
    int result = 0;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
        struct iovec vector = {.iov_base = chunk, .iov_len = sizeof(chunk)};
        socket_ring_add(ring, pair[0], &vector, 1);
        ring->queued = 0;
        __atomic_store_n(ring->sq_tail, *ring->sq_tail + 1, __ATOMIC_RELEASE);
        if (ring_enter(ring->fd, 1, 0, 0) == 1) {
            unsigned head = *ring->cq_head;
            if (head != __atomic_load_n(ring->cq_tail, __ATOMIC_ACQUIRE)) {
                result = ring->cqes[head & *ring->cq_mask].res == -EAGAIN;
                __atomic_store_n(ring->cq_head, head + 1, __ATOMIC_RELEASE);
            } else {
                // Parked: closing the peer fails it; wait for that completion.
                close(pair[1]);
                pair[1] = -1;
                ring_enter(ring->fd, 0, 1, IORING_ENTER_GETEVENTS);
                __atomic_store_n(ring->cq_head, head + 1, __ATOMIC_RELEASE);
            }
        }
    }
    close(pair[0]);
    if (pair[1] >= 0) close(pair[1]);
    return result;
}

socket_ring *socket_ring_create(unsigned entries) {
    if (entries == 0 || entries > 4096 || (entries & (entries - 1)) != 0) return NULL;
    struct io_uring_params params;
    memset(&params, 0, sizeof(params));
    // One thread submits, nothing interrupts it to run completions, and a failing send does not
    // stop the ones after it.
    params.flags = IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER;
    params.cq_entries = entries * 2;
    params.flags |= IORING_SETUP_CQSIZE;
    int fd = ring_setup(entries, &params);
    if (fd < 0) return NULL;
    // Both rings in one mapping, and completions never dropped (5.4+ / 5.5+).
    if (!(params.features & IORING_FEAT_SINGLE_MMAP) || !(params.features & IORING_FEAT_NODROP) || params.sq_entries < entries) {
        close(fd);
        return NULL;
    }
    socket_ring *ring = calloc(1, sizeof(*ring));
    if (ring == NULL) {
        close(fd);
        return NULL;
    }
    ring->fd = fd;
    ring->entries = entries;
    size_t sq_size = params.sq_off.array + params.sq_entries * sizeof(unsigned);
    size_t cq_size = params.cq_off.cqes + params.cq_entries * sizeof(struct io_uring_cqe);
    ring->rings_size = sq_size > cq_size ? sq_size : cq_size;
    ring->rings = mmap(NULL, ring->rings_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQ_RING);
    ring->sqes_size = params.sq_entries * sizeof(struct io_uring_sqe);
    ring->sqes = mmap(NULL, ring->sqes_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
    ring->headers = calloc(entries, sizeof(struct msghdr));
    if (ring->rings == MAP_FAILED || ring->sqes == MAP_FAILED || ring->headers == NULL) {
        if (ring->rings == MAP_FAILED) ring->rings = NULL;
        if (ring->sqes == MAP_FAILED) ring->sqes = NULL;
        socket_ring_destroy(ring);
        return NULL;
    }
    char *base = ring->rings;
    ring->sq_tail = (unsigned *)(base + params.sq_off.tail);
    ring->sq_mask = (unsigned *)(base + params.sq_off.ring_mask);
    ring->sq_array = (unsigned *)(base + params.sq_off.array);
    ring->cq_head = (unsigned *)(base + params.cq_off.head);
    ring->cq_tail = (unsigned *)(base + params.cq_off.tail);
    ring->cq_mask = (unsigned *)(base + params.cq_off.ring_mask);
    ring->cqes = (struct io_uring_cqe *)(base + params.cq_off.cqes);
    if (!ring_fails_full_sends(ring)) {
        socket_ring_destroy(ring);
        return NULL;
    }
    return ring;
}

void socket_ring_destroy(socket_ring *ring) {
    if (ring == NULL) return;
    if (ring->sqes != NULL) munmap(ring->sqes, ring->sqes_size);
    if (ring->rings != NULL) munmap(ring->rings, ring->rings_size);
    free(ring->headers);
    close(ring->fd);
    free(ring);
}

unsigned socket_ring_capacity(const socket_ring *ring) { return ring->entries; }

int socket_ring_add(socket_ring *ring, int fd, const struct iovec *buffers, int count) {
    if (ring->queued >= ring->entries) return -1;
    unsigned index = ring->queued++;
    struct msghdr *header = &ring->headers[index];
    memset(header, 0, sizeof(*header));
    header->msg_iov = (struct iovec *)buffers;
    header->msg_iovlen = (size_t)count;
    // Only this thread writes the submission queue's tail, so a plain read of it is current.
    unsigned tail = *ring->sq_tail + index;
    unsigned slot = tail & *ring->sq_mask;
    struct io_uring_sqe *sqe = &ring->sqes[slot];
    memset(sqe, 0, sizeof(*sqe));
    sqe->opcode = IORING_OP_SENDMSG;
    sqe->fd = fd;
    sqe->addr = (uint64_t)(uintptr_t)header;
    sqe->len = 1;
    sqe->msg_flags = MSG_NOSIGNAL | MSG_DONTWAIT;
    sqe->user_data = index;
    ring->sq_array[slot] = slot;
    return (int)index;
}

int socket_ring_submit(socket_ring *ring, long *results) {
    unsigned queued = ring->queued;
    if (queued == 0) return 0;
    ring->queued = 0;
    for (unsigned index = 0; index < queued; index++) results[index] = -EAGAIN;
    __atomic_store_n(ring->sq_tail, *ring->sq_tail + queued, __ATOMIC_RELEASE);
    int submitted;
    do {
        submitted = ring_enter(ring->fd, queued, 0, 0);
    } while (submitted < 0 && errno == EINTR);
    if (submitted < 0) {
        int error = errno;
        // Take the entries back: nothing was consumed.
        __atomic_store_n(ring->sq_tail, *ring->sq_tail - queued, __ATOMIC_RELEASE);
        return -error;
    }
    // Every send was issued inline and, being MSG_DONTWAIT, completed there (sent, or -EAGAIN):
    // its completion is posted before the call returns. Wait for any that is not (never expected:
    // a send still in flight would read the caller's buffers after this returns).
    unsigned reaped = 0;
    while (reaped < (unsigned)submitted) {
        unsigned head = *ring->cq_head;
        unsigned tail = __atomic_load_n(ring->cq_tail, __ATOMIC_ACQUIRE);
        while (head != tail) {
            struct io_uring_cqe *cqe = &ring->cqes[head & *ring->cq_mask];
            if (cqe->user_data < queued) results[cqe->user_data] = cqe->res;
            head++;
            reaped++;
        }
        __atomic_store_n(ring->cq_head, head, __ATOMIC_RELEASE);
        if (reaped < (unsigned)submitted) {
            int waited;
            do {
                waited = ring_enter(ring->fd, 0, (unsigned)submitted - reaped, IORING_ENTER_GETEVENTS);
            } while (waited < 0 && (errno == EINTR || errno == EAGAIN || errno == EBUSY));
            if (waited < 0) break;  // EBADF / EFAULT: the ring itself is broken
        }
    }
    if ((unsigned)submitted < queued) {
        // Not consumed (the kernel stopped early): give their slots back; they count as not sent.
        __atomic_store_n(ring->sq_tail, *ring->sq_tail - (queued - (unsigned)submitted), __ATOMIC_RELEASE);
    }
    return submitted;
}

#else

socket_ring *socket_ring_create(unsigned entries) { return 0; }
void socket_ring_destroy(socket_ring *ring) {}
unsigned socket_ring_capacity(const socket_ring *ring) { return 0; }
int socket_ring_add(socket_ring *ring, int fd, const struct iovec *buffers, int count) { return -1; }
int socket_ring_submit(socket_ring *ring, long *results) { return 0; }

#endif
