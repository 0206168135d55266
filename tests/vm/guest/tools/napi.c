/* napi: the kernel's netdev generic-netlink family from a guest script (6.9 and later).
 *   napi list IFNAME            one line per NAPI instance: "id ID irq IRQ pid PID threaded T
 *                               defer N gro NS suspend NS rxq Q" (-1 where the kernel leaves the
 *                               attribute out: defer and gro from 6.13, suspend from 6.14,
 *                               threaded from 6.17; rxq = the receive queue whose napi-id is the
 *                               instance, from queue-get, -1 when none or the link is down)
 *   napi threaded NAPI_ID 0|1|2 napi-set: that instance's threaded mode (6.17 and later;
 *                               1 = threaded, 2 = busy-poll from 6.19)
 *   napi set NAPI_ID KEY VALUE [KEY VALUE...]  one napi-set (6.13 and later) with each KEY:
 *                               defer (defer-hard-irqs), gro (gro-flush-timeout, ns),
 *                               suspend (irq-suspend-timeout, ns, 6.14), threaded (0|1|2)
 * Exit 0 on success; 2 with the kernel's error on stderr. */
#include <errno.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* include/uapi/linux/netdev.h */
enum { CMD_QUEUE_GET = 10, CMD_NAPI_GET = 11, CMD_NAPI_SET = 14 };
enum { A_IFINDEX = 1, A_ID, A_IRQ, A_PID, A_DEFER, A_GRO, A_SUSPEND, A_THREADED };
enum { Q_ID = 1, Q_IFINDEX, Q_TYPE, Q_NAPI_ID };
enum { Q_TYPE_RX = 0 };

/* Walks the attributes of a message (the kernel's nla_for_each_attr, which uapi lacks). */
#define NLA_OK(a, len) ((len) >= (int)sizeof(struct nlattr) && (a)->nla_len >= sizeof(struct nlattr) && (a)->nla_len <= (len))
#define NLA_NEXT(a, len) ((len) -= NLA_ALIGN((a)->nla_len), (struct nlattr *)((char *)(a) + NLA_ALIGN((a)->nla_len)))

static int sock;
static uint32_t seq;

struct msg { char buf[512]; size_t len; };

static void begin(struct msg *m, uint16_t type, uint16_t flags, uint8_t cmd) {
    memset(m, 0, sizeof *m);
    struct nlmsghdr *h = (struct nlmsghdr *)m->buf;
    h->nlmsg_type = type;
    h->nlmsg_flags = NLM_F_REQUEST | flags;
    h->nlmsg_seq = ++seq;
    struct genlmsghdr *g = NLMSG_DATA(h);
    g->cmd = cmd;
    g->version = 1;
    m->len = NLMSG_LENGTH(GENL_HDRLEN);
}

static void put(struct msg *m, uint16_t type, const void *data, size_t size) {
    struct nlattr *a = (struct nlattr *)(m->buf + m->len);
    a->nla_type = type;
    a->nla_len = NLA_HDRLEN + size;
    memcpy((char *)a + NLA_HDRLEN, data, size);
    m->len += NLA_ALIGN(a->nla_len);
}

static int64_t attr_uint(struct nlattr *a) {
    if (a->nla_len == NLA_HDRLEN + 4) return *(uint32_t *)((char *)a + NLA_HDRLEN);
    if (a->nla_len == NLA_HDRLEN + 8) return (int64_t)*(uint64_t *)((char *)a + NLA_HDRLEN);
    return -1;
}

typedef void (*on_msg)(struct nlattr *attrs, int len, void *arg);

/* Sends m and reads until the ack or the dump's end; calls f for each reply message. */
static int transact(struct msg *m, on_msg f, void *arg) {
    ((struct nlmsghdr *)m->buf)->nlmsg_len = m->len;
    if (send(sock, m->buf, m->len, 0) < 0) return -errno;
    static char reply[65536];
    for (;;) {
        ssize_t n = recv(sock, reply, sizeof reply, 0);
        if (n < 0) return -errno;
        for (struct nlmsghdr *h = (struct nlmsghdr *)reply; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
            if (h->nlmsg_type == NLMSG_DONE) return 0;
            if (h->nlmsg_type == NLMSG_ERROR) {
                struct nlmsgerr *e = NLMSG_DATA(h);
                return e->error;
            }
            if (f) {
                struct nlattr *attrs = (struct nlattr *)((char *)NLMSG_DATA(h) + GENL_HDRLEN);
                f(attrs, h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN), arg);
            }
        }
    }
}

static void family_id(struct nlattr *a, int len, void *arg) {
    for (; NLA_OK(a, len); a = NLA_NEXT(a, len))
        if ((a->nla_type & NLA_TYPE_MASK) == CTRL_ATTR_FAMILY_ID) *(uint16_t *)arg = *(uint16_t *)((char *)a + NLA_HDRLEN);
}

/* Receive queues by the NAPI instance that serves them (queue-get's napi-id). */
static struct { int64_t napi, queue; } rxq[256];
static int nrxq;

static void note_queue(struct nlattr *a, int len, void *arg) {
    int64_t v[Q_NAPI_ID + 1];
    for (int i = 0; i <= Q_NAPI_ID; i++) v[i] = -1;
    for (; NLA_OK(a, len); a = NLA_NEXT(a, len)) {
        int t = a->nla_type & NLA_TYPE_MASK;
        if (t <= Q_NAPI_ID) v[t] = attr_uint(a);
    }
    if (v[Q_IFINDEX] != *(int64_t *)arg || v[Q_TYPE] != Q_TYPE_RX || v[Q_NAPI_ID] < 0) return;
    if (nrxq < (int)(sizeof rxq / sizeof rxq[0])) {
        rxq[nrxq].napi = v[Q_NAPI_ID];
        rxq[nrxq++].queue = v[Q_ID];
    }
}

static void print_napi(struct nlattr *a, int len, void *arg) {
    int64_t v[A_THREADED + 1];
    for (int i = 0; i <= A_THREADED; i++) v[i] = -1;
    for (; NLA_OK(a, len); a = NLA_NEXT(a, len)) {
        int t = a->nla_type & NLA_TYPE_MASK;
        if (t <= A_THREADED) v[t] = attr_uint(a);
    }
    if (arg && v[A_IFINDEX] != *(int64_t *)arg) return;
    int64_t queue = -1;
    for (int i = 0; i < nrxq; i++)
        if (rxq[i].napi == v[A_ID]) queue = rxq[i].queue;
    printf("id %lld irq %lld pid %lld threaded %lld defer %lld gro %lld suspend %lld rxq %lld\n",
           (long long)v[A_ID], (long long)v[A_IRQ], (long long)v[A_PID], (long long)v[A_THREADED],
           (long long)v[A_DEFER], (long long)v[A_GRO], (long long)v[A_SUSPEND], (long long)queue);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: napi list IFNAME | napi threaded NAPI_ID 0|1|2 |"
                        " napi set NAPI_ID defer|gro|suspend|threaded VALUE...\n");
        return 2;
    }
    sock = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
    if (sock < 0) { perror("napi: socket"); return 2; }
    struct msg m;
    uint16_t family = 0;
    begin(&m, GENL_ID_CTRL, NLM_F_ACK, CTRL_CMD_GETFAMILY);
    put(&m, CTRL_ATTR_FAMILY_NAME, "netdev", 7);
    int err = transact(&m, family_id, &family);
    if (err || !family) { fprintf(stderr, "napi: no netdev family: %s\n", strerror(-err)); return 2; }
    if (!strcmp(argv[1], "list")) {
        int64_t ifindex = if_nametoindex(argv[2]);
        if (!ifindex) { fprintf(stderr, "napi: no interface %s\n", argv[2]); return 2; }
        uint32_t i = ifindex;
        /* The queues first (their dump is empty while the link is down; an error leaves rxq -1). */
        begin(&m, family, NLM_F_DUMP, CMD_QUEUE_GET);
        put(&m, Q_IFINDEX, &i, 4);
        if (transact(&m, note_queue, &ifindex)) nrxq = 0;
        begin(&m, family, NLM_F_DUMP, CMD_NAPI_GET);
        put(&m, A_IFINDEX, &i, 4);
        err = transact(&m, print_napi, &ifindex);
    } else if (!strcmp(argv[1], "threaded") && argc == 4) {
        uint32_t id = strtoul(argv[2], NULL, 10), mode = strtoul(argv[3], NULL, 10);
        begin(&m, family, NLM_F_ACK, CMD_NAPI_SET);
        put(&m, A_ID, &id, 4);
        put(&m, A_THREADED, &mode, 4);
        err = transact(&m, NULL, NULL);
    } else if (!strcmp(argv[1], "set") && argc >= 5 && argc % 2 == 1) {
        uint32_t id = strtoul(argv[2], NULL, 10);
        begin(&m, family, NLM_F_ACK, CMD_NAPI_SET);
        put(&m, A_ID, &id, 4);
        for (int k = 3; k + 1 < argc; k += 2) {
            char *end;
            unsigned long long v = strtoull(argv[k + 1], &end, 10);
            if (*end || end == argv[k + 1]) { fprintf(stderr, "napi: %s is not a number\n", argv[k + 1]); return 2; }
            uint32_t v32 = v;
            uint64_t v64 = v;
            if (!strcmp(argv[k], "defer")) put(&m, A_DEFER, &v32, 4);
            else if (!strcmp(argv[k], "threaded")) put(&m, A_THREADED, &v32, 4);
            else if (!strcmp(argv[k], "gro")) put(&m, A_GRO, &v64, 8);       /* uint: 4 or 8 bytes */
            else if (!strcmp(argv[k], "suspend")) put(&m, A_SUSPEND, &v64, 8);
            else { fprintf(stderr, "napi: unknown key %s (defer, gro, suspend, threaded)\n", argv[k]); return 2; }
        }
        err = transact(&m, NULL, NULL);
    } else {
        fprintf(stderr, "napi: unknown command %s\n", argv[1]);
        return 2;
    }
    if (err) { fprintf(stderr, "napi %s %s: %s\n", argv[1], argv[2], strerror(-err)); return 2; }
    return 0;
}
