"""The groups of the settings tree that configure the fleet itself: the broker, object storage,
the GPU fleet, limits, observability, and the few tuning levers a user may need
(`PAGEFLEET_ADVANCED__…`). Tuning the fleet has no need of the environment otherwise: those values
are named constants beside the code that uses them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pagefleet.workers.settings.reading import VlmSettings


class BrokerSettings(BaseModel):
    """The Redis broker: where it is, how long a command may wait on it, how lost work comes back,
    and how long finished state stays in it."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field("redis://127.0.0.1:6379/0", description="the Redis broker of the fleet")
    result_backend: str | None = Field(
        None, description="Celery result backend (default: the broker url)"
    )
    # above the consumers' BRPOP (1 s, answered by the server) and any command we send: a failover,
    # a NAT or firewall drop leaves connections half-open, with no RST
    redis_socket_timeout_s: float = Field(
        30.0, ge=5, description="a Redis command on a dead connection fails after"
    )
    redis_connect_timeout_s: float = Field(
        5.0, gt=0, description="connecting to Redis gives up after"
    )
    redis_health_check_s: int = Field(
        10, ge=1, description="a half-open consumer connection is dropped after ~this"
    )
    # the visibility timeout exceeds the hard task time limit, so a running task is never redelivered
    visibility_margin_s: int = Field(
        60, ge=5, description="visibility timeout = hard time limit + this"
    )
    # kombu looks for unacked messages past the visibility timeout every interval × throttle seconds
    # (10 × 10 by default: up to 100 s late); we scan on every interval
    unacked_restore_interval_s: int = Field(
        10, ge=1, description="how often workers restore a dead worker's messages"
    )
    worker_heartbeat_s: float = Field(
        5.0, gt=0, description="how often a worker beats and looks for dead peers"
    )
    worker_dead_after_s: float = Field(
        30.0, gt=0, description="a worker silent this long is dead: its messages go back"
    )
    full_ratio: float = Field(
        0.95, gt=0, le=1, description="producers refuse jobs above this share of Redis maxmemory"
    )
    full_wait_s: float = Field(
        300.0, ge=0, description="a worker waits this long for a full Redis to free memory"
    )
    job_record_ttl_s: int = Field(
        7 * 86400, ge=60, description="a finished job's Redis records expire after"
    )
    jobs_index_max: int = Field(
        100_000, ge=100, description="the jobs index keeps at most this many ids"
    )
    deadletter_max: int = Field(
        100_000, ge=100, description="the dead-letter list keeps the newest"
    )

    def visibility_for(self, task_time_limit: int) -> int:
        """Longer than the longest task (its hard limit), so only a dead worker's work comes back."""
        return int(task_time_limit) + self.visibility_margin_s

    def transport_options(self, task_time_limit: int) -> dict[str, Any]:
        """The Redis transport's options: visibility timeout and how often it is enforced; how long
        a command waits on a connection that stopped answering, and kombu's check of its consumers'."""
        return {
            "visibility_timeout": self.visibility_for(task_time_limit),
            "unacked_restore_interval": self.unacked_restore_interval_s,
            "unacked_restore_throttle": 1,
            "socket_timeout": self.redis_socket_timeout_s,
            "socket_connect_timeout": self.redis_connect_timeout_s,
            "socket_keepalive": True,
            "health_check_interval": self.redis_health_check_s,
        }


class StorageSettings(BaseModel):
    """Object storage (S3 or MinIO) and the workers' local cache of sources."""

    model_config = ConfigDict(extra="forbid")

    s3_endpoint: str = Field("127.0.0.1:9000", description="S3 or MinIO endpoint, host:port")
    s3_access_key: str = Field(
        "minioadmin",
        description="static S3 key; empty (with s3_secret_key) uses the credential chain",
    )
    s3_secret_key: str = Field("minioadmin", description="static S3 secret")
    s3_secure: bool = Field(False, description="HTTPS to the S3 endpoint")
    s3_region: str | None = Field(None, description="S3 region (default: asked of the endpoint)")
    s3_timeout_s: float = Field(
        60.0,
        gt=0,
        description="an S3 request's connect and read timeout: a stalled "
        "connection fails (retried once, then StorageError) instead of waiting minio's 5 minutes",
    )
    s3_lookup_timeout_s: float = Field(
        2.0,
        gt=0,
        le=60,
        description="a producer's HEAD of a source (`submit` "
        "of s3:// sources, all at once): its timeout, retried once",
    )
    cache_dir: str = Field(
        "/tmp/pagefleet-cache", description="where workers keep downloaded sources"
    )


class GpuSettings(BaseModel):
    """The GPU fleet: whether OCR goes to it, its workers' pool, and its VLM engines."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(False, description="route OCR to the gpu queue and its VLM chains")
    # "threads" runs a gpu-queue worker's tasks on threads whose pages share the VLM's generate
    # calls (pagefleet/workers/engines/batching.py; a task keeps its own soft time limit there,
    # pagefleet/workers/fleet/deadline.py); "prefork" one task at a time in a pool child
    pool: Literal["threads", "prefork"] = Field(
        "threads",
        description="a gpu-queue worker's pool: threads "
        "share generate calls; prefork runs one task at a time",
    )
    vlm: VlmSettings = Field(
        default_factory=VlmSettings, description="VLM engines: model ids, batches, an HTTP server"
    )


class LimitsSettings(BaseModel):
    """How long work may take and how often it is tried: task time limits, the stall deadline and
    re-dispatch, callback retries, the PDF sandbox's limits."""

    model_config = ConfigDict(extra="forbid")

    # bounded, so the visibility timeout (hard limit + broker.visibility_margin_s) can be short: a
    # dead worker's unacked pages come back in minutes
    task_soft_time_limit: int = Field(
        420, description="a task is asked to stop after this many seconds"
    )
    task_time_limit: int = Field(480, description="a task is killed after this many seconds")
    max_page_attempts: int = Field(
        3,
        ge=1,
        description="deliveries of a page that kills its worker before it "
        "is `failed` and dead-lettered",
    )
    job_deadline_s: int = Field(
        3600, ge=1, description="`pagefleet run` gives up waiting after this"
    )
    # must exceed the visibility timeout: a worker's unacked pages come back first
    job_deadline_minutes: float = Field(
        15.0,
        gt=0,
        description="minutes without progress before a job is "
        "stalled (the watchdog re-dispatches what is missing)",
    )
    watchdog_interval_s: float = Field(60.0, gt=0, description="how often the beat schedule sweeps")
    max_redispatch: int = Field(
        2, ge=0, description="re-dispatches of a stalled job before it is finished"
    )
    callback_timeout_s: float = Field(
        5.0, gt=0, description="a completion callback POST gives up after"
    )
    callback_max_retries: int = Field(
        8, ge=0, description="retries of a failed callback before it is dead-lettered"
    )
    callback_backoff_max_s: int = Field(
        600, ge=1, description="longest wait between two callback retries"
    )
    sandbox_timeout_s: float = Field(
        120.0, gt=0, description="a sandboxed PDF command is killed after this"
    )
    sandbox_memory_mb: int = Field(
        3072, ge=256, description="address-space limit of a sandbox child"
    )

    @property
    def deadline_s(self) -> float:
        return self.job_deadline_minutes * 60.0


class HeartbeatSettings(BaseModel):
    """Probe files for containers (`pagefleet-probe`)."""

    model_config = ConfigDict(extra="forbid")

    dir: str | None = Field(None, description="where the files live; unset disables the heartbeat")
    interval_s: float = Field(
        10.0, gt=0, le=300, description="how often a worker touches its files"
    )
    max_age_s: float = Field(120.0, gt=0, description="liveness fails when `alive` is older")


class SentrySettings(BaseModel):
    """Error reporting; Sentry's own `SENTRY_DSN` and `SENTRY_ENVIRONMENT` are read too."""

    model_config = ConfigDict(extra="forbid")

    dsn: str | None = Field(None, description="where errors are reported; unset: Sentry off")
    environment: str | None = Field(None, description="the environment name events carry")
    traces_sample_rate: float = Field(
        0.0, ge=0.0, le=1.0, description="share of tasks traced for performance (0: none)"
    )


class ObservabilitySettings(BaseModel):
    """Logs, container probes and error reporting."""

    model_config = ConfigDict(extra="forbid")

    loglevel: str = Field("WARNING", description="log level of the CLI (workers take --loglevel)")
    log_format: Literal["plain", "json"] = Field(
        "plain", description="json: one object a line with job id and page"
    )
    heartbeat: HeartbeatSettings = Field(
        default_factory=HeartbeatSettings, description="probe files for containers"
    )
    sentry: SentrySettings = Field(default_factory=SentrySettings, description="error reporting")


class AdvancedSettings(BaseModel):
    """Tuning levers that a site may need to move (a benchmark, a test, a fleet of unusual
    documents); the defaults suit a fleet. Everything else tuned lives as constants in the code."""

    model_config = ConfigDict(extra="forbid")

    # every sandbox command forks from a warm per-worker server (PyMuPDF imported once) instead of
    # starting an interpreter; off: one `python -m pagefleet.workers.pdf.sandbox` process per command
    sandbox_fork_server: bool = Field(
        True, description="sandbox commands fork from a warm per-worker server"
    )
    # 1: a fresh child per command, nothing shared between documents; more saves the fork (~12 ms
    # of CPU) where uploads are trusted alike
    sandbox_reuse: int = Field(
        1,
        ge=1,
        le=1000,
        description="commands one sandbox child may run in turn (1: a fresh child per command)",
    )
    # a big document's range tasks in one worker process share a child: no fork and no cold memory
    # per range; it leaves when a command for another file comes, after 2 s without one, or past
    # half its memory limit
    sandbox_reuse_document: bool = Field(
        True, description="a child also runs the further commands on the file of its first one"
    )
    # "" picks /dev/shm where it is a RAM file system with room, else the temp dir: on ext4,
    # truncating the result file before every command starts its writeback and waits for it
    sandbox_scratch_dir: str = Field(
        "",
        description="where a worker's sandbox scratch files live (empty: "
        "/dev/shm where it has room, else the temp dir)",
    )
    # rung 1's text walk in C (pagefleet/workers/pdf/stextwalk.c, with the RTL rows of stextrows.c and
    # stextorder.c; built by `make setup`; the same answers as the Python path, which runs where
    # it is off or was not built)
    native_walk: bool = Field(
        True, description="rung 1's text walk in C where it was built (the same answers)"
    )
    # a document of more pages is split into a chord of range tasks so every core works on it
    split_range_pages: int = Field(
        25, ge=1, description="a longer document is split into page-range tasks of this many pages"
    )
    split_max_ranges: int = Field(
        64, ge=1, description="most range tasks one document is split into"
    )
    split_range_queue: Literal["split", "cpu"] = Field(
        "cpu", description="the queue range tasks go to"
    )
    # off: a document of several ranges is collected by `split_done`, after its last range
    stream_collect: bool = Field(
        True,
        description="a document of several ranges is collected while its ranges "
        "run (structure off)",
    )
    # documents submitted together (a folder, `pagefleet run`, the bench) go to the split queue as
    # batches whose documents share a sandbox child (`sandbox.shared_child`)
    split_batch_documents: int = Field(
        16,
        ge=1,
        le=256,
        description="small documents submitted together go "
        "as split tasks of this many (1: a task each)",
    )
    split_batch_max_bytes: int = Field(
        2 * 1024 * 1024, ge=0, description="largest document that joins a batch"
    )
