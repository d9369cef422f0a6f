# hotkv-server in a container: slim Python, non-root, data in the /data volume.
#
#   docker build -t hotkv .
#   docker run -p 6379:6379 -v hotkv-data:/data -e HOTKV_REQUIREPASS=secret hotkv
#   docker run -e HOTKV_REQUIREPASS_FILE=/run/secrets/pw -e HOTKV_APPENDFSYNC=always hotkv --maxmemory 1gb
#
# The image listens on every interface, so it requires a password (HOTKV_REQUIREPASS, a
# file named by HOTKV_REQUIREPASS_FILE, or an aclfile) and refuses to start without one,
# unless it listens on the loopback only (HOTKV_BIND=127.0.0.1, a sidecar).
#
# Configuration: HOTKV_<DIRECTIVE> environment variables and --directive flags (flags
# win); see src/hotkv_server/clients/entrypoint.py. The health check PINGs the server on
# HOTKV_PORT with HOTKV_REQUIREPASS, so set the port and password through the environment.

# --- build: wheels for the package and its dependencies (hnswlib compiles from source),
# with the wordllama extra: the default embedder, whose model ships inside its wheel
FROM python:3.11-slim AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip wheel --no-cache-dir --wheel-dir /wheels ".[wordllama]"

# --- run
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOTKV_PORT=6379 \
    HOTKV_DIR=/data
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links=/wheels "hotkv[wordllama]" \
    && rm -rf /wheels \
    && useradd --system --uid 10001 --user-group --home-dir /data --shell /usr/sbin/nologin hotkv \
    && mkdir -p /data \
    && chown hotkv:hotkv /data
USER hotkv
WORKDIR /data
VOLUME ["/data"]
EXPOSE 6379
HEALTHCHECK --interval=10s --timeout=3s --start-period=15s --retries=3 \
    CMD ["python", "-m", "hotkv_server.clients.healthcheck"]
ENTRYPOINT ["python", "-m", "hotkv_server.clients.entrypoint"]
CMD []
