# Herald's push gateway (`herald serve`) in a container. See docs/install.md.
#
# From source (the default target; the build stage needs network to fetch the packages):
#   docker build -t herald .
# From a release archive that scripts/release.sh made (no Swift build at all):
#   docker build --target from-archive --build-arg ARCHIVE=dist/herald-<version>-linux-x86_64.tar.gz -t herald .
# Run (herald.json and the key files it names in ./config; the database in a volume):
#   docker run -d --name herald -p 8080:8080 --stop-timeout 30 \
#       -v "$PWD/config:/etc/herald:ro" -v herald-data:/var/lib/herald herald
#
# The configuration is /etc/herald/herald.json (paths in it are relative to /etc/herald). The
# database is sqlite:/var/lib/herald/herald.db unless HERALD_DATABASE_URL says otherwise
# (postgres://…; an empty value uses the file's "database"). The API listens on 0.0.0.0:8080,
# whatever the file's "listen" says.

ARG SWIFT_IMAGE=swift:6.3-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

# What the binary needs from the system and nothing more (docs/install.md): glibc, libstdc++,
# libgcc_s and zlib are in the base image; CA certificates for TLS to APNs, FCM, Web Push, webhooks and PostgreSQL; tzdata
# for TZ and the local time (time zone names in the API use the tz data built into the binary);
# curl for the health check.
FROM ${RUNTIME_IMAGE} AS runtime-base
RUN set -eux; \
    apt-get update; \
    apt-get install -y --no-install-recommends ca-certificates tzdata curl; \
    rm -rf /var/lib/apt/lists/*; \
    groupadd --system --gid 10001 herald; \
    useradd --system --uid 10001 --gid herald --home-dir /var/lib/herald --no-create-home --shell /usr/sbin/nologin herald; \
    install -d -m 0755 /etc/herald; \
    install -d -m 0750 -o herald -g herald /var/lib/herald
ENV HERALD_DATABASE_URL=sqlite:/var/lib/herald/herald.db
WORKDIR /var/lib/herald
VOLUME ["/var/lib/herald"]
EXPOSE 8080
USER herald
# /readyz: the database is reachable and migrated. The first start migrates, hence the grace.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD ["curl", "-fsS", "-o", "/dev/null", "http://127.0.0.1:8080/readyz"]
# SIGTERM (docker stop) lets batches in flight finish within workers.shutdownGraceSeconds (20 s
# by default) and 5 s more: give `docker stop` / `docker run` a --stop-timeout above that.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/herald", "serve"]
CMD ["--config", "/etc/herald/herald.json", "--listen", "0.0.0.0:8080"]

# The binary from a release archive (scripts/release.sh), given relative to the build context.
FROM ${RUNTIME_IMAGE} AS unpack-archive
ARG ARCHIVE
COPY ${ARCHIVE} /tmp/herald.tar.gz
RUN set -eux; \
    mkdir -p /out; \
    tar -xzf /tmp/herald.tar.gz -C /out --strip-components=1; \
    test -x /out/bin/herald

FROM runtime-base AS from-archive
COPY --from=unpack-archive /out/bin/herald /usr/local/bin/herald

# The binary from source, Swift's runtime linked in (--static-swift-stdlib).
FROM ${SWIFT_IMAGE} AS build
WORKDIR /src
# The manifest and pins first, so a change to the sources does not fetch the packages again.
COPY Package.swift Package.resolve[d] ./
RUN swift package resolve
COPY Sources Sources
COPY Tests Tests
RUN set -eux; \
    swift build -c release --product herald --static-swift-stdlib; \
    install -D -m 0755 "$(swift build -c release --product herald --static-swift-stdlib --show-bin-path)/herald" /out/bin/herald; \
    strip /out/bin/herald

FROM runtime-base AS runtime
COPY --from=build /out/bin/herald /usr/local/bin/herald
