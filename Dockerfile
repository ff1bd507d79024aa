# nodewarden container image: `make image` (needs a Docker engine).
# Stage 1 builds build/nodewarden on Debian 12; stage 2 carries only the binary and
# the shared libraries it links, and runs as a non-root user (65532).
FROM debian:12-slim AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      build-essential pkg-config libmicrohttpd-dev libgnutls28-dev libssl-dev libcjson-dev \
      libcurl4-openssl-dev libyaml-dev libxml2-dev check ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# the packages are installed above: mark `make deps` as done (it would add test tools)
RUN mkdir -p build && touch build/.deps-ok && make -j"$(nproc)" build/nodewarden \
 && strip build/nodewarden && build/nodewarden version

FROM debian:12-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      libmicrohttpd12 libgnutls30 libssl3 libcjson1 libcurl4 libyaml-0-2 libxml2 ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd -g 65532 nodewarden && useradd -u 65532 -g 65532 -M -d /nonexistent -s /usr/sbin/nologin nodewarden
COPY --from=build /src/build/nodewarden /usr/local/bin/nodewarden
USER 65532:65532
EXPOSE 8443 8080
ENTRYPOINT ["/usr/local/bin/nodewarden"]
CMD ["serve", "--config", "/etc/nodewarden/config.yaml"]
