#ifndef CHATSUITE_SOCKET_RING_H
#define CHATSUITE_SOCKET_RING_H

#include <stdint.h>
#include <sys/uio.h>

/// Several sockets' writes in one system call: an io_uring whose `sendmsg`s are all issued inline
/// by one `io_uring_enter` and never wait (each is `MSG_DONTWAIT`: a full send buffer completes
/// with -EAGAIN instead of parking the request), so every result is known when it returns and the
/// caller's buffers need to live only through the call. One ring per thread: not thread-safe.
typedef struct socket_ring socket_ring;

/// A ring for up to `entries` sends per submission (a power of two, at most 4096); NULL when the
/// kernel refuses io_uring (too old, disabled by `kernel.io_uring_disabled`, or a seccomp filter,
/// as Docker's default one) or lacks what this ring relies on.
socket_ring *socket_ring_create(unsigned entries);
void socket_ring_destroy(socket_ring *ring);

/// How many sends one submission holds.
unsigned socket_ring_capacity(const socket_ring *ring);

/// Queues a `sendmsg` of `count` buffers on `fd` (`MSG_NOSIGNAL | MSG_DONTWAIT`); the buffers must
/// stay valid until `socket_ring_submit` returns. Returns the send's index in this submission, or
/// -1 when the submission is full.
int socket_ring_add(socket_ring *ring, int fd, const struct iovec *buffers, int count);

/// Issues the queued sends with one `io_uring_enter` and writes each one's result into
/// `results[index]`: the bytes the socket took, or -errno (-EAGAIN: its send buffer was full).
/// Returns how many sends it issued (the queue is then empty), or -errno when the kernel took none
/// (their results are then undefined and the caller sends them another way).
int socket_ring_submit(socket_ring *ring, long *results);

#endif
