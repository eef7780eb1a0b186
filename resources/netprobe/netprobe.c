/*
 * Lumen's network probe: a shared library preloaded (LD_PRELOAD) into a Lumen
 * process to see every attempt to reach another machine, from any library in
 * the process (Python, llama.cpp, onnxruntime, chromadb's Rust core, Qt), not
 * only from Python code, which is all the in-process guard can see.
 *
 * It wraps the C library's entry points for name lookups (getaddrinfo,
 * gethostbyname and friends, the res_* resolver calls) and for sending
 * (connect, sendto, sendmsg, sendmmsg).  Every call that names another machine
 * is written as one line to the file named by LUMEN_NETPROBE_LOG and refused
 * (EAI_FAIL / HOST_NOT_FOUND / ENETUNREACH), so nothing leaves the machine
 * while the probe watches.  Calls that stay on this machine (Unix sockets,
 * netlink, loopback addresses, "localhost") are passed through unrecorded.
 *
 * Lines: "<event> <pid> <tid> <target>\n", written with one O_APPEND write so
 * lines from threads and child processes never interleave.
 *
 * Built by desktop_app/core/netprobe.py with the system's C compiler (or taken
 * ready-made from the bundle).  Written for glibc on Linux.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

static void probe_record(const char *event, const char *target) {
    const char *path = getenv("LUMEN_NETPROBE_LOG");
    if (path == NULL || *path == '\0') return;
    char line[512];
    int n = snprintf(line, sizeof line, "%s %d %ld %.400s\n", event, (int)getpid(),
                     (long)syscall(SYS_gettid), target ? target : "(null)");
    if (n <= 0) return;
    if (n >= (int)sizeof line) n = (int)sizeof line - 1;
    for (int i = 0; i < n - 1; i++)  /* one line per event, whatever the name holds */
        if (line[i] == '\n' || line[i] == '\r') line[i] = '?';
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return;
    ssize_t ignored = write(fd, line, (size_t)n);
    (void)ignored;
    close(fd);
}

static int name_is_local(const char *name) {
    if (name == NULL || *name == '\0') return 1;  /* passive lookup of this host */
    if (strcasecmp(name, "localhost") == 0 || strcasecmp(name, "localhost.") == 0 ||
        strcasecmp(name, "localhost.localdomain") == 0 || strcasecmp(name, "ip6-localhost") == 0 ||
        strcasecmp(name, "ip6-loopback") == 0)
        return 1;
    struct in_addr v4;
    struct in6_addr v6;
    if (inet_pton(AF_INET, name, &v4) == 1)
        return (ntohl(v4.s_addr) >> 24) == 127 || v4.s_addr == 0;
    if (inet_pton(AF_INET6, name, &v6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&v6) || IN6_IS_ADDR_UNSPECIFIED(&v6);
    return 0;
}

/* 1 when the address stays on this machine; `out` gets a printable form. */
static int address_is_local(const struct sockaddr *addr, socklen_t len, char *out, size_t size) {
    if (addr == NULL) { snprintf(out, size, "(connected socket)"); return 1; }
    if (len < (socklen_t)sizeof(sa_family_t)) { snprintf(out, size, "(short address)"); return 0; }
    switch (addr->sa_family) {
    case AF_UNIX:
    case AF_NETLINK:
        snprintf(out, size, "local");
        return 1;
    case AF_UNSPEC:
        snprintf(out, size, "AF_UNSPEC");  /* connect(AF_UNSPEC) dissolves an association */
        return 1;
    case AF_INET: {
        const struct sockaddr_in *in = (const struct sockaddr_in *)addr;
        char host[INET_ADDRSTRLEN] = "?";
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        snprintf(out, size, "%s:%d", host, ntohs(in->sin_port));
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    case AF_INET6: {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)addr;
        char host[INET6_ADDRSTRLEN] = "?";
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        snprintf(out, size, "[%s]:%d", host, ntohs(in6->sin6_port));
        if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) return 1;
        if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
            return in6->sin6_addr.s6_addr[12] == 127;
        return 0;
    }
    default:
        snprintf(out, size, "family %d", addr->sa_family);
        return 0;
    }
}

#define REAL(name) static __typeof__(name) *real_##name; \
    if (!real_##name) real_##name = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

/* ---- sending ---- */

int connect(int fd, const struct sockaddr *addr, socklen_t len) {
    REAL(connect);
    char target[128];
    if (!address_is_local(addr, len, target, sizeof target)) {
        probe_record("connect", target);
        errno = ENETUNREACH;
        return -1;
    }
    return real_connect(fd, addr, len);
}

ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *addr,
               socklen_t len) {
    REAL(sendto);
    char target[128];
    if (addr != NULL && !address_is_local(addr, len, target, sizeof target)) {
        probe_record("sendto", target);
        errno = ENETUNREACH;
        return -1;
    }
    return real_sendto(fd, buf, n, flags, addr, len);
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags) {
    REAL(sendmsg);
    char target[128];
    if (msg != NULL && msg->msg_name != NULL &&
        !address_is_local((const struct sockaddr *)msg->msg_name, msg->msg_namelen, target,
                          sizeof target)) {
        probe_record("sendmsg", target);
        errno = ENETUNREACH;
        return -1;
    }
    return real_sendmsg(fd, msg, flags);
}

int sendmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags) {
    REAL(sendmmsg);
    char target[128];
    for (unsigned int i = 0; vec != NULL && i < vlen; i++) {
        const struct msghdr *msg = &vec[i].msg_hdr;
        if (msg->msg_name != NULL &&
            !address_is_local((const struct sockaddr *)msg->msg_name, msg->msg_namelen, target,
                              sizeof target)) {
            probe_record("sendmmsg", target);
            errno = ENETUNREACH;
            return -1;
        }
    }
    return real_sendmmsg(fd, vec, vlen, flags);
}

/* ---- name lookups ---- */

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                struct addrinfo **res) {
    REAL(getaddrinfo);
    if (!name_is_local(node)) {
        probe_record("getaddrinfo", node);
        return EAI_FAIL;
    }
    return real_getaddrinfo(node, service, hints, res);
}

struct hostent *gethostbyname(const char *name) {
    REAL(gethostbyname);
    if (!name_is_local(name)) {
        probe_record("gethostbyname", name);
        h_errno = HOST_NOT_FOUND;
        return NULL;
    }
    return real_gethostbyname(name);
}

struct hostent *gethostbyname2(const char *name, int af) {
    REAL(gethostbyname2);
    if (!name_is_local(name)) {
        probe_record("gethostbyname2", name);
        h_errno = HOST_NOT_FOUND;
        return NULL;
    }
    return real_gethostbyname2(name, af);
}

int gethostbyname_r(const char *name, struct hostent *ret, char *buf, size_t buflen,
                    struct hostent **result, int *h_errnop) {
    REAL(gethostbyname_r);
    if (!name_is_local(name)) {
        probe_record("gethostbyname_r", name);
        if (result) *result = NULL;
        if (h_errnop) *h_errnop = HOST_NOT_FOUND;
        return ENOENT;
    }
    return real_gethostbyname_r(name, ret, buf, buflen, result, h_errnop);
}

int gethostbyname2_r(const char *name, int af, struct hostent *ret, char *buf, size_t buflen,
                     struct hostent **result, int *h_errnop) {
    REAL(gethostbyname2_r);
    if (!name_is_local(name)) {
        probe_record("gethostbyname2_r", name);
        if (result) *result = NULL;
        if (h_errnop) *h_errnop = HOST_NOT_FOUND;
        return ENOENT;
    }
    return real_gethostbyname2_r(name, af, ret, buf, buflen, result, h_errnop);
}

/* The resolver's own calls: a library may query DNS without getaddrinfo. */
#define RESOLVER(fn, args, call_args) \
    int fn args { \
        static int (*real) args; \
        if (!real) real = (int (*) args)dlsym(RTLD_NEXT, #fn); \
        if (!name_is_local(dname)) { probe_record(#fn, dname); h_errno = HOST_NOT_FOUND; return -1; } \
        return real ? real call_args : -1; \
    }

#define QUERY_ARGS (const char *dname, int class, int type, unsigned char *answer, int anslen)
#define QUERY_CALL (dname, class, type, answer, anslen)
#define DOMAIN_ARGS (const char *dname, const char *domain, int class, int type, \
                     unsigned char *answer, int anslen)
#define DOMAIN_CALL (dname, domain, class, type, answer, anslen)
/* <resolv.h> renames res_query to __res_query: programs call one name or the other. */
RESOLVER(res_query, QUERY_ARGS, QUERY_CALL)
RESOLVER(__res_query, QUERY_ARGS, QUERY_CALL)
RESOLVER(res_search, QUERY_ARGS, QUERY_CALL)
RESOLVER(__res_search, QUERY_ARGS, QUERY_CALL)
RESOLVER(res_querydomain, DOMAIN_ARGS, DOMAIN_CALL)
RESOLVER(__res_querydomain, DOMAIN_ARGS, DOMAIN_CALL)

/* Reverse lookups of another machine's address ask DNS too. */
struct hostent *gethostbyaddr(const void *addr, socklen_t len, int type) {
    REAL(gethostbyaddr);
    char host[INET6_ADDRSTRLEN] = "?";
    int local = 0;
    if (addr != NULL && type == AF_INET && len >= 4) {
        inet_ntop(AF_INET, addr, host, sizeof host);
        local = ((const unsigned char *)addr)[0] == 127;
    } else if (addr != NULL && type == AF_INET6 && len >= 16) {
        inet_ntop(AF_INET6, addr, host, sizeof host);
        local = IN6_IS_ADDR_LOOPBACK((const struct in6_addr *)addr);
    }
    if (!local) {
        probe_record("gethostbyaddr", host);
        h_errno = HOST_NOT_FOUND;
        return NULL;
    }
    return real_gethostbyaddr(addr, len, type);
}

int getnameinfo(const struct sockaddr *addr, socklen_t len, char *host, socklen_t hostlen,
                char *serv, socklen_t servlen, int flags) {
    REAL(getnameinfo);
    char target[128];
    if (host != NULL && hostlen > 0 && !(flags & NI_NUMERICHOST) &&
        !address_is_local(addr, len, target, sizeof target)) {
        probe_record("getnameinfo", target);
        return EAI_FAIL;
    }
    return real_getnameinfo(addr, len, host, hostlen, serv, servlen, flags);
}
