# nodewarden container image: `make image` (needs a Docker engine).
#
# The same image as `make release` builds without Docker (docs/release.md): the binary
# built with the release's flags and stripped, on `scratch` the root that
# tools/release/image.py assembles from the Debian packages owning the libraries the
# binary loads (plus ca-certificates' bundle, base-files' os-release, passwd/group for
# 65532; no shell), then the binary: two layers, uid/gid 65532. Docker writes its own
# layer tars, so the digests differ from the release's; the files do not (for one
# architecture: the build container's; `docker buildx build --platform
# linux/amd64,linux/arm64` builds both under emulation).
FROM debian:12-slim AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      build-essential pkg-config libmicrohttpd-dev libgnutls28-dev libssl-dev libcjson-dev \
      libcurl4-openssl-dev libyaml-dev libxml2-dev python3 ca-certificates
# apt's lists stay: image.py fetches the runtime packages with apt-get download
WORKDIR /src
COPY . .
ARG VERSION=
ARG REVISION=unknown
ARG SOURCE_DATE_EPOCH=0
# the packages are installed above: mark `make deps` as done (it would add test tools)
RUN mkdir -p build && touch build/.deps-ok \
 && make -j"$(nproc)" BUILD=/build CFLAGS="-O2 -g -ffile-prefix-map=/src=." \
      VERSION="${VERSION:-$(cat VERSION)}" GIT_REV="$(echo "$REVISION" | cut -c1-12)" \
      CHECK_CFLAGS= CHECK_LIBS= /build/nodewarden \
 && strip -o /nodewarden /build/nodewarden && /nodewarden version \
 && python3 tools/release/image.py rootfs --arch "$(dpkg --print-architecture)" \
      --binary /nodewarden --out /image

FROM scratch
ARG VERSION=
ARG REVISION=unknown
COPY --from=build /image/base/ /
COPY --from=build /image/app/ /
LABEL org.opencontainers.image.title=nodewarden \
      org.opencontainers.image.version=$VERSION \
      org.opencontainers.image.revision=$REVISION \
      org.opencontainers.image.source=https://github.com/nodewarden/nodewarden \
      org.opencontainers.image.licenses=Apache-2.0
ENV PATH=/usr/local/bin:/usr/bin:/bin
USER 65532:65532
EXPOSE 8080 8443
ENTRYPOINT ["/usr/local/bin/nodewarden"]
CMD ["serve", "--config", "/etc/nodewarden/config.yaml"]
