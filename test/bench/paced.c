/*
 * The paced (fixed-rate) load generator of `bun run bench` (test/bench/run.ts). wrk drives
 * the saturation runs; it cannot pace, so this sends a fixed number of requests per second
 * instead (open loop: the schedule does not wait for answers). Linux, libc and libm only:
 *
 *   cc -O2 -o paced test/bench/paced.c -lm
 *   paced <ipv4> <port> <connections> <seconds> <rate> <base> <head> <body> [<head> <body>]...
 *
 * Request k (k = 0, 1, ...) is due at start + k / rate, for `seconds`; it uses template
 * k % (number of templates). A template is the request head without its blank line
 * ("POST /api/send HTTP/1.1\r\nhost: ...\r\nname: value\r\n") and a body; a
 * "content-length" header is added. In head and body, "[<phone>]" becomes a phone no other
 * request of the run uses ("+1" and 10 digits: 2000000000 + base + k, as
 * test/bench/wrk/common.lua makes them) and "[<n>]" becomes base + k.
 *
 * `connections` keep-alive connections, one request in flight on each. A due request goes
 * out at once on an idle connection; when none is idle it waits in a FIFO for the first one
 * to become free. Latency is counted from the time the request was DUE to the end of its
 * answer, so waiting for a connection, or a late generator, counts against the server (no
 * coordinated omission). Between due times the loop sleeps in epoll_pwait2 (nanosecond
 * timeout, timer slack 1 ns) until SPIN_NS before the next one, then polls without
 * sleeping, so requests leave within microseconds of their time.
 *
 * The generator's own lag is the time from a request's due time to when the loop handled
 * it: written to an idle connection (after write() returned), or put in the FIFO because
 * every connection was busy (that wait is the server's, in the latency, not the lag). The
 * rate was kept when every due request was sent and the lag p99 is under 1 ms.
 *
 * Answers are parsed (status line; Content-Length, Transfer-Encoding: chunked, or a body up
 * to the close; Connection: close). Answers outside 2xx are status errors; a connection
 * that fails or closes with a request in flight is a socket error, and is reconnected. The
 * run ends when every due request is answered, or at most DRAIN_NS after the last due
 * time: requests unanswered then are timeouts.
 *
 * Prints one JSON line. Latencies and lags in µs: requests (answered), seconds, rate
 * (offered), rps (answered per second of schedule), p50 p90 p99 max, statusErrors,
 * socketErrors (in-flight requests lost), connectErrors, timeouts, due, sent, queued (sent
 * after a FIFO wait), lagP50 lagP99 lagMax, late (lag > 1 ms), keptRate, cpuUs (the
 * generator's CPU time), statuses ({"200": n, ...}).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef SPIN_NS
#define SPIN_NS 50000LL /* poll without sleeping for the last 50 µs before a due time */
#endif
#define DRAIN_NS 2000000000LL    /* answers may arrive up to 2 s after the last due time */
#define CONNECT_NS 1000000000LL  /* the connections have 1 s to open before the schedule starts */
#define RETRY_NS 10000000LL      /* a connection that failed to open is tried again after 10 ms */
#define LATE_NS 1000000LL        /* "late": sent more than 1 ms after its due time */
#define MAX_EVENTS 64

typedef int64_t ns_t;

static ns_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (ns_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void die(const char *msg) {
  fprintf(stderr, "paced: %s\n", msg);
  exit(2);
}

static void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n);
  if (!q) die("out of memory");
  return q;
}

/* ---- growable byte buffer and int64 array ---- */

typedef struct { char *p; size_t len, cap; } buf_t;

static void buf_reserve(buf_t *b, size_t extra) {
  if (b->len + extra <= b->cap) return;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->len + extra) cap *= 2;
  b->p = xrealloc(b->p, cap);
  b->cap = cap;
}

static void buf_add(buf_t *b, const char *s, size_t n) {
  buf_reserve(b, n);
  memcpy(b->p + b->len, s, n);
  b->len += n;
}

typedef struct { int64_t *p; size_t len, cap; } vec_t;

static void vec_push(vec_t *v, int64_t x) {
  if (v->len == v->cap) {
    v->cap = v->cap ? v->cap * 2 : 65536;
    v->p = xrealloc(v->p, v->cap * sizeof *v->p);
  }
  v->p[v->len++] = x;
}

static int cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The p-th percentile of a sorted array (nearest rank), -1 when empty. */
static int64_t pct(const vec_t *v, double p) {
  if (v->len == 0) return -1;
  size_t i = (size_t)ceil(p / 100.0 * (double)v->len);
  if (i < 1) i = 1;
  if (i > v->len) i = v->len;
  return v->p[i - 1];
}

/* ---- the run ---- */

enum { C_CONNECTING, C_IDLE, C_BUSY, C_DOWN };
/* Parse states of an answer. */
enum { P_HEAD, P_LENGTH, P_CHUNK_SIZE, P_CHUNK_DATA, P_TRAILER, P_TO_CLOSE };

typedef struct {
  int fd, state;
  ns_t due;          /* the in-flight request's due time */
  ns_t retry_at;     /* C_DOWN: when to connect again */
  buf_t out;         /* the request being written */
  size_t out_off;
  buf_t in;          /* bytes read, not yet consumed */
  int parse, status, close_after;
  size_t pos;        /* parse cursor in `in` */
  uint64_t need;     /* P_LENGTH: body bytes still expected; P_CHUNK_DATA: chunk bytes + CRLF */
  int want_out;      /* EPOLLOUT registered */
  uint32_t gen;      /* socket generation: events of a closed socket are ignored */
} conn_t;

typedef struct { const char *head, *body; } tmpl_t;

static struct sockaddr_in addr;
static int ep;
static conn_t *conns;
static int nconns;
static tmpl_t *tmpls;
static int ntmpls;
static long long base;
static double rate;
static ns_t start;
static int64_t *fifo;   /* request numbers waiting for a connection */
static size_t fifo_head, fifo_tail;
static vec_t latencies, lags;
static long long answered, sent, queued, late, status_errors, socket_errors, connect_errors, inflight;
static long long statuses[600];
static long long other_statuses;

static ns_t due_of(int64_t k) { return start + (ns_t)llround((double)k * 1e9 / rate); }

static void watch(conn_t *c, int op, int out) {
  struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP | (out ? EPOLLOUT : 0), .data.u64 = (uint64_t)c->gen << 32 | (uint64_t)(c - conns) };
  if (epoll_ctl(ep, op, c->fd, &ev) < 0) die("epoll_ctl failed");
  c->want_out = out;
}

static void open_conn(conn_t *c, ns_t now) {
  c->in.len = 0;
  c->out.len = c->out_off = 0;
  c->parse = P_HEAD;
  c->pos = 0;
  c->close_after = 0;
  c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c->fd < 0) die("socket() failed");
  int one = 1;
  setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(c->fd, (struct sockaddr *)&addr, sizeof addr) < 0 && errno != EINPROGRESS) {
    close(c->fd);
    c->fd = -1;
    connect_errors++;
    c->state = C_DOWN;
    c->retry_at = now + RETRY_NS;
    return;
  }
  c->state = C_CONNECTING;
  c->gen++;
  watch(c, EPOLL_CTL_ADD, 1);
}

/* Closes a connection (its in-flight request, if any, is lost) and opens a new one. */
static void drop(conn_t *c, ns_t now, int failed_connect) {
  if (c->state == C_BUSY) {
    socket_errors++;
    inflight--;
  }
  if (failed_connect) connect_errors++;
  if (c->fd >= 0) close(c->fd); /* also removes it from the epoll set */
  c->fd = -1;
  if (failed_connect) {
    c->state = C_DOWN;
    c->retry_at = now + RETRY_NS;
  } else {
    open_conn(c, now);
  }
}

/* Writes what is left of the connection's request; 0 when all written or waiting for EPOLLOUT, -1 on error. */
static int flush(conn_t *c) {
  while (c->out_off < c->out.len) {
    ssize_t n = write(c->fd, c->out.p + c->out_off, c->out.len - c->out_off);
    if (n > 0) {
      c->out_off += (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!c->want_out) watch(c, EPOLL_CTL_MOD, 1);
      return 0;
    }
    return -1;
  }
  if (c->want_out) watch(c, EPOLL_CTL_MOD, 0);
  return 0;
}

/* Appends s[0..n) to b with the placeholders filled for request k. */
static void fill(buf_t *b, const char *s, int64_t k) {
  char num[32];
  while (*s) {
    if (strncmp(s, "[<phone>]", 9) == 0) {
      buf_add(b, num, (size_t)snprintf(num, sizeof num, "+1%lld", 2000000000LL + base + (long long)k));
      s += 9;
    } else if (strncmp(s, "[<n>]", 5) == 0) {
      buf_add(b, num, (size_t)snprintf(num, sizeof num, "%lld", base + (long long)k));
      s += 5;
    } else {
      const char *next = strstr(s + 1, "[<");
      size_t n = next ? (size_t)(next - s) : strlen(s);
      buf_add(b, s, n);
      s += n;
    }
  }
}

static buf_t body_buf;

/* Sends request k (due at `due`) on idle connection c. */
static void send_req(conn_t *c, int64_t k, ns_t due, ns_t now) {
  const tmpl_t *t = &tmpls[k % ntmpls];
  body_buf.len = 0;
  fill(&body_buf, t->body, k);
  c->out.len = c->out_off = 0;
  fill(&c->out, t->head, k);
  char cl[48];
  buf_add(&c->out, cl, (size_t)snprintf(cl, sizeof cl, "content-length: %zu\r\n\r\n", body_buf.len));
  buf_add(&c->out, body_buf.p, body_buf.len);
  c->state = C_BUSY;
  c->due = due;
  c->parse = P_HEAD;
  c->pos = 0;
  sent++;
  inflight++;
  (void)now;
  if (flush(c) < 0) drop(c, now_ns(), 0);
}

/* A connection became idle: it takes the oldest waiting request, if any. */
static void idle(conn_t *c, ns_t now) {
  c->state = C_IDLE;
  if (fifo_head < fifo_tail) {
    int64_t k = fifo[fifo_head++];
    queued++;
    send_req(c, k, due_of(k), now);
  }
}

static int find_crlf(const buf_t *b, size_t from, size_t *at) {
  for (size_t i = from; i + 1 < b->len; i++) {
    if (b->p[i] == '\r' && b->p[i + 1] == '\n') {
      *at = i;
      return 1;
    }
  }
  return 0;
}

/* Parses the head in in[0..end): status, framing. -1 when malformed. */
static int parse_head(conn_t *c, size_t end) {
  char *h = c->in.p;
  if (end < 12 || strncmp(h, "HTTP/1.", 7) != 0) return -1;
  c->status = atoi(h + 9);
  if (c->status < 100 || c->status > 599) return -1;
  int chunked = 0, has_length = 0;
  uint64_t length = 0;
  c->close_after = h[7] == '0'; /* HTTP/1.0 closes unless told otherwise; Bun answers 1.1 */
  size_t line = 0;
  find_crlf(&c->in, 0, &line);
  size_t i = line + 2;
  while (i < end) {
    size_t eol;
    if (!find_crlf(&c->in, i, &eol) || eol > end) eol = end;
    char *name = h + i;
    char *colon = memchr(name, ':', eol - i);
    if (colon) {
      size_t nlen = (size_t)(colon - name);
      char *v = colon + 1;
      while (v < h + eol && (*v == ' ' || *v == '\t')) v++;
      size_t vlen = (size_t)(h + eol - v);
      if (nlen == 14 && strncasecmp(name, "content-length", 14) == 0) {
        has_length = 1;
        length = strtoull(v, NULL, 10);
      } else if (nlen == 17 && strncasecmp(name, "transfer-encoding", 17) == 0) {
        for (size_t j = 0; j + 7 <= vlen; j++)
          if (strncasecmp(v + j, "chunked", 7) == 0) chunked = 1;
      } else if (nlen == 10 && strncasecmp(name, "connection", 10) == 0) {
        if (vlen >= 5 && strncasecmp(v, "close", 5) == 0) c->close_after = 1;
        if (vlen >= 10 && strncasecmp(v, "keep-alive", 10) == 0) c->close_after = 0;
      }
    }
    i = eol + 2;
  }
  c->pos = end + 4;
  if (c->status < 200 || c->status == 204 || c->status == 304) {
    c->parse = P_LENGTH;
    c->need = 0;
  } else if (chunked) {
    c->parse = P_CHUNK_SIZE;
  } else if (has_length) {
    c->parse = P_LENGTH;
    c->need = length;
  } else {
    c->parse = P_TO_CLOSE;
  }
  return 0;
}

/* One answer fully read: record it, keep the bytes after it. */
static void answer(conn_t *c, ns_t now) {
  if (c->status >= 100 && c->status < 200) {
    /* An interim answer (100 Continue): the real one follows. */
    memmove(c->in.p, c->in.p + c->pos, c->in.len - c->pos);
    c->in.len -= c->pos;
    c->pos = 0;
    c->parse = P_HEAD;
    return;
  }
  answered++;
  inflight--;
  vec_push(&latencies, (now - c->due) / 1000);
  if (c->status < 600) statuses[c->status]++;
  else other_statuses++;
  if (c->status < 200 || c->status > 299) status_errors++;
  size_t rest = c->in.len - c->pos;
  memmove(c->in.p, c->in.p + c->pos, rest);
  c->in.len = rest;
  c->pos = 0;
  c->parse = P_HEAD;
  if (c->close_after || rest > 0) {
    /* Closed by the server, or bytes nobody asked for: start afresh. */
    c->state = C_IDLE;
    drop(c, now, 0);
    return;
  }
  idle(c, now);
}

/* Parses as much of the buffered answer as there is; -1 on a malformed answer. */
static int parse(conn_t *c, ns_t now) {
  for (;;) {
    if (c->state != C_BUSY) return c->in.len ? -1 : 0;
    switch (c->parse) {
      case P_HEAD: {
        char *end = c->in.len >= 4 ? memmem(c->in.p, c->in.len, "\r\n\r\n", 4) : NULL;
        if (!end) return c->in.len > (1 << 20) ? -1 : 0;
        if (parse_head(c, (size_t)(end - c->in.p)) < 0) return -1;
        break;
      }
      case P_LENGTH:
        if (c->in.len - c->pos < c->need) return 0;
        c->pos += c->need;
        answer(c, now);
        if (c->state != C_BUSY) return 0;
        break;
      case P_CHUNK_SIZE: {
        size_t eol;
        if (!find_crlf(&c->in, c->pos, &eol)) return 0;
        char *endp;
        uint64_t size = strtoull(c->in.p + c->pos, &endp, 16);
        if (endp == c->in.p + c->pos) return -1;
        c->pos = eol + 2;
        if (size == 0) c->parse = P_TRAILER;
        else {
          c->parse = P_CHUNK_DATA;
          c->need = size + 2;
        }
        break;
      }
      case P_CHUNK_DATA:
        if (c->in.len - c->pos < c->need) return 0;
        c->pos += c->need;
        c->parse = P_CHUNK_SIZE;
        break;
      case P_TRAILER: {
        size_t eol;
        if (!find_crlf(&c->in, c->pos, &eol)) return 0;
        int empty = eol == c->pos;
        c->pos = eol + 2;
        if (empty) {
          answer(c, now);
          if (c->state != C_BUSY) return 0;
        }
        break;
      }
      case P_TO_CLOSE:
        return 0; /* the answer ends when the server closes */
    }
  }
}

static void on_event(uint64_t data, uint32_t events, ns_t now) {
  conn_t *c = &conns[(uint32_t)data];
  if (c->fd < 0 || (uint32_t)(data >> 32) != c->gen) return;
  if (c->state == C_CONNECTING) {
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err || (events & (EPOLLERR | EPOLLHUP))) {
      drop(c, now, 1);
      return;
    }
    if (!(events & EPOLLOUT)) return;
    watch(c, EPOLL_CTL_MOD, 0);
    idle(c, now);
    if (c->state != C_BUSY) return;
  }
  if ((events & EPOLLOUT) && c->state == C_BUSY && c->out_off < c->out.len) {
    if (flush(c) < 0) {
      drop(c, now, 0);
      return;
    }
  }
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
    for (int i = 0; i < 64; i++) { /* bounded: at most 64 reads per event */
      buf_reserve(&c->in, 16384);
      ssize_t n = read(c->fd, c->in.p + c->in.len, c->in.cap - c->in.len);
      if (n > 0) {
        c->in.len += (size_t)n;
        ns_t t = now_ns();
        if (parse(c, t) < 0) {
          drop(c, t, 0);
          return;
        }
        if (c->fd < 0 || c->state == C_CONNECTING) return; /* dropped and reopened */
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      /* Closed by the server (n == 0) or failed. */
      ns_t t = now_ns();
      if (n == 0 && c->state == C_BUSY && c->parse == P_TO_CLOSE) {
        c->pos = c->in.len;
        c->close_after = 1;
        answer(c, t); /* reopens the connection */
        return;
      }
      drop(c, t, 0);
      return;
    }
  }
}

static int wait_events(struct epoll_event *evs, ns_t timeout) {
  static int no_pwait2 = 0;
  if (timeout <= 0) return epoll_wait(ep, evs, MAX_EVENTS, 0);
  if (!no_pwait2) {
    struct timespec ts = { .tv_sec = timeout / 1000000000LL, .tv_nsec = timeout % 1000000000LL };
    int n = epoll_pwait2(ep, evs, MAX_EVENTS, &ts, NULL);
    if (n >= 0 || errno != ENOSYS) return n;
    no_pwait2 = 1;
  }
  /* Kernels before 5.11: millisecond timeouts, rounded down (the rest is polled). */
  return epoll_wait(ep, evs, MAX_EVENTS, (int)(timeout / 1000000LL));
}

int main(int argc, char **argv) {
  if (argc < 9 || (argc - 7) % 2 != 0)
    die("usage: paced <ipv4> <port> <connections> <seconds> <rate> <base> <head> <body> [<head> <body>]...");
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  if (inet_pton(AF_INET, argv[1], &addr.sin_addr) != 1) die("bad address (an IPv4 address, e.g. 127.0.0.1)");
  int port = atoi(argv[2]);
  nconns = atoi(argv[3]);
  double seconds = atof(argv[4]);
  rate = atof(argv[5]);
  base = atoll(argv[6]);
  if (port <= 0 || port > 65535 || nconns <= 0 || nconns > 10000 || !(seconds > 0) || seconds > 3600 || !(rate > 0) || rate > 1e7)
    die("bad port, connections, seconds or rate");
  addr.sin_port = htons((uint16_t)port);
  ntmpls = (argc - 7) / 2;
  tmpls = xrealloc(NULL, sizeof *tmpls * (size_t)ntmpls);
  for (int i = 0; i < ntmpls; i++) tmpls[i] = (tmpl_t){ argv[7 + 2 * i], argv[8 + 2 * i] };

  signal(SIGPIPE, SIG_IGN);
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); /* wake-ups within ~1 µs of the timeout, not 50 µs */
  ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) die("epoll_create1 failed");

  int64_t total = (int64_t)ceil(seconds * rate - 1e-9); /* due times in [start, start + seconds) */
  fifo = xrealloc(NULL, sizeof *fifo * (size_t)(total > 0 ? total : 1));
  lags.p = xrealloc(NULL, sizeof *lags.p * (size_t)(total > 0 ? total : 1));
  lags.cap = (size_t)(total > 0 ? total : 1);

  conns = xrealloc(NULL, sizeof *conns * (size_t)nconns);
  memset(conns, 0, sizeof *conns * (size_t)nconns);
  struct epoll_event evs[MAX_EVENTS];
  ns_t t0 = now_ns();
  for (int i = 0; i < nconns; i++) open_conn(&conns[i], t0);

  /* Open the connections first (up to CONNECT_NS): the schedule starts with them idle. */
  for (;;) {
    ns_t now = now_ns();
    int open = 0;
    for (int i = 0; i < nconns; i++) {
      if (conns[i].state == C_IDLE) open++;
      else if (conns[i].state == C_DOWN && now >= conns[i].retry_at) open_conn(&conns[i], now);
    }
    if (open == nconns || now - t0 >= CONNECT_NS) break;
    int n = wait_events(evs, 1000000LL);
    for (int i = 0; i < n; i++) on_event(evs[i].data.u64, evs[i].events, now_ns());
  }

  start = now_ns() + 1000000LL;
  ns_t end = start + (ns_t)llround(seconds * 1e9);
  ns_t deadline = end + DRAIN_NS;
  int64_t next = 0;
  ns_t next_retry = 0;
  for (;;) {
    ns_t now = now_ns();
    /* Every request now due: on an idle connection, else into the FIFO. */
    while (next < total && due_of(next) <= now) {
      ns_t due = due_of(next);
      conn_t *c = NULL;
      /* Idle connections only exist while the FIFO is empty (a freed connection takes its head). */
      for (int i = 0; i < nconns && fifo_head == fifo_tail; i++)
        if (conns[i].state == C_IDLE) {
          c = &conns[i];
          break;
        }
      ns_t handled;
      if (c) {
        send_req(c, next, due, now);
        handled = now_ns();
      } else {
        fifo[fifo_tail++] = next;
        handled = now;
      }
      ns_t lag = handled - due;
      lags.p[lags.len++] = lag / 1000;
      if (lag > LATE_NS) late++;
      next++;
      now = handled;
    }
    if (next >= total && inflight == 0 && fifo_head == fifo_tail) break;
    if (now >= deadline) break;
    /* Reconnect connections that failed to open, at most every RETRY_NS. */
    if (now >= next_retry) {
      next_retry = now + RETRY_NS;
      for (int i = 0; i < nconns; i++)
        if (conns[i].state == C_DOWN && now >= conns[i].retry_at) open_conn(&conns[i], now);
    }
    ns_t wake = next < total ? due_of(next) - SPIN_NS : deadline;
    if (next_retry < wake) wake = next_retry;
    int n = wait_events(evs, wake - now);
    if (n < 0 && errno != EINTR) die("epoll_wait failed");
    for (int i = 0; i < n; i++) on_event(evs[i].data.u64, evs[i].events, now_ns());
  }

  long long timeouts = inflight + 0; /* sent, neither answered nor lost when the run ended */
  for (int i = 0; i < nconns; i++)
    if (conns[i].fd >= 0) close(conns[i].fd);

  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  long long cpu_us = (long long)ru.ru_utime.tv_sec * 1000000LL + ru.ru_utime.tv_usec + (long long)ru.ru_stime.tv_sec * 1000000LL + ru.ru_stime.tv_usec;
  qsort(latencies.p, latencies.len, sizeof *latencies.p, cmp64);
  qsort(lags.p, lags.len, sizeof *lags.p, cmp64);
  int64_t lag_p99 = pct(&lags, 99);
  int kept = (int64_t)lags.len == total && sent == total && lag_p99 >= 0 && lag_p99 < 1000;
  printf("{\"requests\":%lld,\"seconds\":%.6g,\"rate\":%.6g,\"rps\":%.3f,\"p50\":%lld,\"p90\":%lld,\"p99\":%lld,\"max\":%lld,"
         "\"statusErrors\":%lld,\"socketErrors\":%lld,\"connectErrors\":%lld,\"timeouts\":%lld,\"due\":%lld,\"sent\":%lld,\"queued\":%lld,"
         "\"lagP50\":%lld,\"lagP99\":%lld,\"lagMax\":%lld,\"late\":%lld,\"keptRate\":%s,\"cpuUs\":%lld,\"statuses\":{",
         answered, seconds, rate, (double)answered / seconds, (long long)pct(&latencies, 50), (long long)pct(&latencies, 90),
         (long long)pct(&latencies, 99), (long long)(latencies.len ? latencies.p[latencies.len - 1] : -1), status_errors, socket_errors,
         connect_errors, timeouts, (long long)lags.len, sent, queued, (long long)pct(&lags, 50), (long long)lag_p99,
         (long long)(lags.len ? lags.p[lags.len - 1] : -1), late, kept ? "true" : "false", cpu_us);
  const char *sep = "";
  for (int s = 0; s < 600; s++)
    if (statuses[s]) {
      printf("%s\"%d\":%lld", sep, s, statuses[s]);
      sep = ",";
    }
  if (other_statuses) printf("%s\"other\":%lld", sep, other_statuses);
  printf("}}\n");
  return 0;
}
