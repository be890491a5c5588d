# The POSIX identity admission webhook: `hyperpod-tenancy webhook serve` (src/hyperpod_tenancy/webhook).
# Built by the PosixIdentityWebhook construct as a CDK asset (`cdk deploy` builds and pushes it; synth needs no
# Docker). Only the server's runtime dependencies are installed: the package itself goes in with --no-deps, so
# aws-cdk-lib, cdk8s, duckdb and the other synth/CLI dependencies never reach the image.
FROM public.ecr.aws/docker/library/python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /build
COPY pyproject.toml README.md ./
COPY src ./src
# the server stack (pinned as in pyproject.toml) and what `hyperpod_tenancy.cli` imports at start
RUN pip install \
        "uvicorn==0.54.0" "uvloop==0.23.0" "httptools==0.9.0" "orjson==3.13.0" \
        "boto3==1.44.8" "pydantic==2.14.4" "pyyaml==6.0.4" \
    && pip install --no-deps . \
    && cd / && rm -rf /build

RUN groupadd --system --gid 10001 webhook \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin webhook
USER 10001:10001
WORKDIR /
EXPOSE 8443
ENTRYPOINT ["hyperpod-tenancy", "webhook", "serve"]
