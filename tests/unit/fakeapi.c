/* tests/unit/fakeapi.c — see fakeapi.h. */
#include "tests/unit/fakeapi.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_CONNS 256

struct fake_conn {
    fake_srv_t *srv;
    int fd;
    int close_after;
    pthread_t th;
    int done;
};

struct fake_srv {
    int lfd, port;
    fake_handler_fn fn;
    void *ud;
    pthread_t accept_th;
    pthread_mutex_t mu;
    int stopping;
    fake_conn_t *conns[MAX_CONNS];
    int nconns;
};

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static const char *status_text(int code)
{
    switch (code) {
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 401:
        return "Unauthorized";
    case 404:
        return "Not Found";
    case 409:
        return "Conflict";
    case 410:
        return "Gone";
    case 422:
        return "Unprocessable Entity";
    case 429:
        return "Too Many Requests";
    case 500:
        return "Internal Server Error";
    case 503:
        return "Service Unavailable";
    default:
        return "Status";
    }
}

void fake_reply(fake_conn_t *c, int code, const char *extra, const char *body)
{
    char head[1024];
    size_t bl = body ? strlen(body) : 0;
    snprintf(head, sizeof head,
             "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n%s%s\r\n",
             code, status_text(code), bl, extra ? extra : "",
             c->close_after ? "Connection: close\r\n" : "");
    if (write_all(c->fd, head, strlen(head)) == 0 && bl)
        write_all(c->fd, body, bl);
}

void fake_stream_begin(fake_conn_t *c, int code)
{
    char head[256];
    snprintf(
        head, sizeof head,
        "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
        code, status_text(code));
    write_all(c->fd, head, strlen(head));
}

int fake_stream_chunk(fake_conn_t *c, const char *data, size_t n)
{
    char h[32];
    snprintf(h, sizeof h, "%zx\r\n", n);
    if (write_all(c->fd, h, strlen(h)) || write_all(c->fd, data, n) || write_all(c->fd, "\r\n", 2))
        return -1;
    return 0;
}

void fake_stream_end(fake_conn_t *c)
{
    write_all(c->fd, "0\r\n\r\n", 5);
}

void fake_close(fake_conn_t *c)
{
    c->close_after = 1;
}

static int hexv(int ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

int fake_query(const char *path, const char *key, char *buf, size_t len)
{
    const char *q = strchr(path, '?');
    size_t kl = strlen(key);
    while (q) {
        q++;
        if (!strncmp(q, key, kl) && q[kl] == '=') {
            const char *v = q + kl + 1;
            size_t n = 0;
            while (*v && *v != '&' && n + 1 < len) {
                if (*v == '%' && hexv(v[1]) >= 0 && hexv(v[2]) >= 0) {
                    buf[n++] = (char)(hexv(v[1]) * 16 + hexv(v[2]));
                    v += 3;
                } else {
                    buf[n++] = *v == '+' ? ' ' : *v;
                    v++;
                }
            }
            buf[n] = '\0';
            return 1;
        }
        q = strchr(q, '&');
    }
    if (len)
        buf[0] = '\0';
    return 0;
}

static void *conn_main(void *arg)
{
    fake_conn_t *c = arg;
    char *buf = malloc(1 << 20);
    size_t have = 0;
    while (buf && !c->close_after) {
        char *end;
        while (!(end = memmem(buf, have, "\r\n\r\n", 4))) {
            if (have >= (1 << 20) - 1)
                goto out;
            ssize_t r = recv(c->fd, buf + have, (1 << 20) - 1 - have, 0);
            if (r <= 0)
                goto out;
            have += (size_t)r;
        }
        fake_req_t req;
        memset(&req, 0, sizeof req);
        size_t hl = (size_t)(end - buf) + 4;
        buf[hl - 2] = '\0';
        sscanf(buf, "%15s %4095s", req.method, req.path);
        size_t clen = 0;
        for (char *line = strstr(buf, "\r\n"); line && line[2]; line = strstr(line + 2, "\r\n")) {
            char *l = line + 2;
            if (!strncasecmp(l, "Content-Length:", 15))
                clen = strtoul(l + 15, NULL, 10);
            else if (!strncasecmp(l, "Authorization:", 14))
                sscanf(l + 14, " %511[^\r\n]", req.auth);
            else if (!strncasecmp(l, "Content-Type:", 13))
                sscanf(l + 13, " %127[^\r\n]", req.ctype);
        }
        while (have < hl + clen) {
            if (hl + clen >= (1 << 20))
                goto out;
            ssize_t r = recv(c->fd, buf + have, (1 << 20) - 1 - have, 0);
            if (r <= 0)
                goto out;
            have += (size_t)r;
        }
        req.body = malloc(clen + 1);
        memcpy(req.body, buf + hl, clen);
        req.body[clen] = '\0';
        req.body_len = clen;
        c->srv->fn(c->srv->ud, &req, c);
        free(req.body);
        memmove(buf, buf + hl + clen, have - hl - clen);
        have -= hl + clen;
    }
out:
    free(buf);
    shutdown(c->fd, SHUT_RDWR);
    return NULL;
}

static void *accept_main(void *arg)
{
    fake_srv_t *s = arg;
    for (;;) {
        int fd = accept(s->lfd, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR)
                continue;
            return NULL;
        }
        pthread_mutex_lock(&s->mu);
        if (s->stopping || s->nconns >= MAX_CONNS) {
            pthread_mutex_unlock(&s->mu);
            close(fd);
            if (s->stopping)
                return NULL;
            continue;
        }
        fake_conn_t *c = calloc(1, sizeof *c);
        c->srv = s;
        c->fd = fd;
        s->conns[s->nconns++] = c;
        pthread_create(&c->th, NULL, conn_main, c);
        pthread_mutex_unlock(&s->mu);
    }
}

fake_srv_t *fake_srv_start(fake_handler_fn fn, void *ud)
{
    fake_srv_t *s = calloc(1, sizeof *s);
    ck_assert_ptr_nonnull(s);
    s->fn = fn;
    s->ud = ud;
    pthread_mutex_init(&s->mu, NULL);
    s->lfd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(s->lfd, 0);
    int one = 1;
    setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(s->lfd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(s->lfd, 64), 0);
    socklen_t al = sizeof a;
    getsockname(s->lfd, (struct sockaddr *)&a, &al);
    s->port = ntohs(a.sin_port);
    pthread_create(&s->accept_th, NULL, accept_main, s);
    return s;
}

int fake_srv_port(const fake_srv_t *s)
{
    return s->port;
}

int fake_srv_stopping(fake_srv_t *s)
{
    pthread_mutex_lock(&s->mu);
    int v = s->stopping;
    pthread_mutex_unlock(&s->mu);
    return v;
}

void fake_srv_drop_all(fake_srv_t *s)
{
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->nconns; i++)
        shutdown(s->conns[i]->fd, SHUT_RDWR);
    pthread_mutex_unlock(&s->mu);
}

void fake_srv_stop(fake_srv_t *s)
{
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    pthread_mutex_unlock(&s->mu);
    shutdown(s->lfd, SHUT_RDWR);
    close(s->lfd);
    pthread_join(s->accept_th, NULL);
    fake_srv_drop_all(s);
    for (int i = 0; i < s->nconns; i++) {
        pthread_join(s->conns[i]->th, NULL);
        close(s->conns[i]->fd);
        free(s->conns[i]);
    }
    pthread_mutex_destroy(&s->mu);
    free(s);
}

char *fake_kubeconfig(int port, const char *token)
{
    char *path = strdup("/tmp/nwkcXXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: "
            "http://127.0.0.1:%d\nusers:\n- name: u\n  user:\n    token: %s\ncontexts:\n- name: "
            "fake\n  context: {cluster: fake, user: u, namespace: test}\ncurrent-context: fake\n",
            port, token);
    fclose(f);
    return path;
}
