from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import yaml

from aclarai.daemon.config import Config, default_config_path, load_config
from aclarai.parsers import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def test_default_yaml_matches_the_config_defaults() -> None:
    shipped = yaml.safe_load((ROOT / "aclarai.config.default.yaml").read_text())
    assert Config.model_validate(shipped).model_dump() == Config().model_dump()
    assert default_config_path().read_text() == (ROOT / "aclarai.config.default.yaml").read_text()


def test_layers_user_file_then_env_then_overrides(tmp_path: Path) -> None:
    user = tmp_path / "user.yaml"
    user.write_text("graph:\n  backend: neo4j\nwatch:\n  quiet_period_s: 5\n")
    env = {"ACLARAI_WATCH__QUIET_PERIOD_S": "1.5", "ACLARAI_MODEL__LLM__MODE": "per_agent"}
    config = load_config(user, env=env, overrides={"graph.backend": "sqlite"})
    assert config.graph.backend == "sqlite"
    assert config.watch.quiet_period_s == 1.5
    assert config.model.llm.mode == "per_agent"
    assert config.watch.delete_grace_s == Config().watch.delete_grace_s


def test_user_file_from_xdg_config_home(tmp_path: Path) -> None:
    folder = tmp_path / "cfg" / "aclarai"
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text("threshold:\n  claim_quality: 0.5\n")
    config = load_config(env={"XDG_CONFIG_HOME": str(tmp_path / "cfg")})
    assert config.threshold.claim_quality == 0.5


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("grpah:\n  backend: sqlite\n", "grpah"),
        ("graph:\n  neo4j:\n    urii: x\n", "graph.neo4j.urii"),
    ],
)
def test_unknown_keys_name_the_key_and_file(tmp_path: Path, text: str, key: str) -> None:
    user = tmp_path / "user.yaml"
    user.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(user, env={})
    assert info.value.key == key
    assert str(user) in str(info.value)


def test_unknown_env_key_and_bad_values_are_errors() -> None:
    with pytest.raises(ConfigError, match="ACLARAI_GRAPH__BAKEND"):
        load_config(env={"ACLARAI_GRAPH__BAKEND": "neo4j"})
    with pytest.raises(ConfigError, match=r"graph\.backend"):
        load_config(env={"ACLARAI_GRAPH__BACKEND": "mongodb"})
    with pytest.raises(ConfigError, match=r"model\.llm\.lexical_share"):
        load_config(env={"ACLARAI_MODEL__LLM__LEXICAL_SHARE": "1.5"})
    assert load_config(env={"ACLARAI_MODEL__LLM__LEXICAL_SHARE": "0"}).model.llm.lexical_share == 0


def test_state_dir_outside_the_vault_keyed_by_vault_path(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    config = load_config(env={"XDG_STATE_HOME": str(tmp_path / "state")})
    one, two = config.state_dir_for(tmp_path / "a"), config.state_dir_for(tmp_path / "b")
    assert one != two and one.parent == tmp_path / "state" / "aclarai"
    moved = load_config(env={"ACLARAI_STATE_DIR": str(tmp_path / "elsewhere")})
    assert moved.state_dir_for(tmp_path / "a") == tmp_path / "elsewhere"


def test_secrets_come_from_the_named_variable() -> None:
    config = load_config(env={"MY_NEO4J_PW": "s3cret"})
    assert config.secret("MY_NEO4J_PW") == "s3cret"
    assert config.secret(config.graph.neo4j.password_env) is None


@pytest.fixture
def warnings_logged(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> pytest.LogCaptureFixture:
    """The warnings the loader logs (the CLI's log set-up stops ``aclarai`` propagating)."""
    monkeypatch.setattr(logging.getLogger("aclarai"), "propagate", True)
    caplog.set_level(logging.WARNING, logger="aclarai.daemon.config")
    return caplog


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith("aclarai.daemon.config")]


def test_the_defaults_load_without_a_warning(warnings_logged: pytest.LogCaptureFixture) -> None:
    load_config(env={})
    assert _warnings(warnings_logged) == []


@pytest.mark.parametrize(
    ("text", "read", "old", "new"),
    [
        (
            "processing:\n  workers: 3\n",
            ("processing", "concurrent_notes", 3),
            "processing.workers",
            "processing.concurrent_notes",
        ),
        (
            "processing:\n  retries:\n    max_attempts: 5\n",
            ("model", "llm", "max_attempts", 5),
            "processing.retries.max_attempts",
            "model.llm.max_attempts",
        ),
        ("eval:\n  workers: 2\n", ("eval", "processes", 2), "eval.workers", "eval.processes"),
        (
            "redis:\n  url: redis://h:1/0\n",
            ("eval_stream", "redis_url", "redis://h:1/0"),
            "redis.url",
            "eval_stream.redis_url",
        ),
        (
            "redis:\n  claim_idle_ms: 60000\n",
            ("eval_stream", "reclaim_after_s", 60.0),
            "redis.claim_idle_ms",
            "eval_stream.reclaim_after_s",
        ),
        (
            "redis:\n  block_ms: 250\n",
            ("eval_stream", "block_s", 0.25),
            "redis.block_ms",
            "eval_stream.block_s",
        ),
        ("redis:\n  batch: 4\n", ("eval_stream", "batch", 4), "redis.batch", "eval_stream.batch"),
        (
            "workers:\n  redis_url: redis://h:2/0\n",
            ("grading_workers", "redis_url", "redis://h:2/0"),
            "workers.redis_url",
            "grading_workers.redis_url",
        ),
        (
            "workers:\n  claim_idle_s: 9\n",
            ("grading_workers", "reclaim_after_s", 9),
            "workers.claim_idle_s",
            "grading_workers.reclaim_after_s",
        ),
        (
            "workers:\n  notes_at_once: 7\n",
            ("grading_workers", "concurrent_notes", 7),
            "workers.notes_at_once",
            "grading_workers.concurrent_notes",
        ),
        (
            "workers:\n  block_ms: 1500\n",
            ("grading_workers", "block_s", 1.5),
            "workers.block_ms",
            "grading_workers.block_s",
        ),
        (
            "workers:\n  jobs: 2\n",
            ("grading_workers", "jobs_per_worker", 2),
            "workers.jobs",
            "grading_workers.jobs_per_worker",
        ),
    ],
)
def test_an_old_key_in_a_file_is_read_into_its_new_one_with_one_warning(
    tmp_path: Path,
    warnings_logged: pytest.LogCaptureFixture,
    text: str,
    read: tuple[Any, ...],
    old: str,
    new: str,
) -> None:
    user = tmp_path / "user.yaml"
    user.write_text(text)
    config = load_config(user, env={})
    *path, expected = read
    node: Any = config
    for part in path:
        node = getattr(node, part)
    assert node == expected
    [line] = _warnings(warnings_logged)
    assert f"{old} is now {new}" in line and "\n" not in line


def test_an_old_environment_variable_is_read_into_its_new_key_with_one_warning(
    warnings_logged: pytest.LogCaptureFixture,
) -> None:
    config = load_config(env={"ACLARAI_REDIS__CLAIM_IDLE_MS": "30000"})
    assert config.eval_stream.reclaim_after_s == 30.0
    [line] = _warnings(warnings_logged)
    assert "ACLARAI_REDIS__CLAIM_IDLE_MS is now ACLARAI_EVAL_STREAM__RECLAIM_AFTER_S" in line
    config = load_config(env={"ACLARAI_WORKERS__REDIS_URL": "redis://h:3/0"})
    assert config.grading_workers.redis_url == "redis://h:3/0"


def test_a_key_under_its_old_and_its_new_name_is_an_error(tmp_path: Path) -> None:
    user = tmp_path / "user.yaml"
    user.write_text("workers:\n  jobs: 2\ngrading_workers:\n  jobs_per_worker: 3\n")
    with pytest.raises(ConfigError, match=r"workers\.jobs and grading_workers\.jobs_per_worker"):
        load_config(user, env={})
    env = {"ACLARAI_EVAL__WORKERS": "2", "ACLARAI_EVAL__PROCESSES": "3"}
    with pytest.raises(ConfigError, match="ACLARAI_EVAL__WORKERS and ACLARAI_EVAL__PROCESSES"):
        load_config(env=env)


def test_an_old_section_keeps_its_unknown_keys_unknown(tmp_path: Path) -> None:
    user = tmp_path / "user.yaml"
    user.write_text("redis:\n  url: redis://h:1/0\n  colour: blue\n")
    with pytest.raises(ConfigError) as info:
        load_config(user, env={})
    assert info.value.key == "redis.colour"


def test_the_log_level_is_one_of_the_levels_in_any_case() -> None:
    assert load_config(env={"ACLARAI_LOGGING__LEVEL": "warning"}).logging.level == "WARNING"
    with pytest.raises(ConfigError, match=r"logging\.level \(from ACLARAI_LOGGING__LEVEL\)"):
        load_config(env={"ACLARAI_LOGGING__LEVEL": "LOUD"})


def test_the_reconcile_cron_is_checked_at_load() -> None:
    assert load_config(env={"ACLARAI_WATCH__RECONCILE_CRON": "0 3 * * 1"}).watch.reconcile_cron
    for bad in ("61 * * * *", "* * * *", "every hour"):
        with pytest.raises(ConfigError, match=r"watch\.reconcile_cron"):
            load_config(env={"ACLARAI_WATCH__RECONCILE_CRON": bad})


def test_the_default_cron_the_check_skips_parses() -> None:
    from apscheduler.triggers.cron import CronTrigger

    CronTrigger.from_crontab(Config().watch.reconcile_cron)


@pytest.mark.parametrize(
    ("env", "first", "second"),
    [
        (
            {"ACLARAI_SERVICE__THRESHOLDS__REVIEW_ABOVE": "0.8"},
            "service.thresholds.review_above",
            "service.thresholds.pass_above",
        ),
        (
            {"ACLARAI_SERVICE__WEIGHTS__PRE_CHECKS": "0", "ACLARAI_SERVICE__WEIGHTS__JUDGES": "0"},
            "service.weights.pre_checks",
            "service.weights.judges",
        ),
        (
            {"ACLARAI_SERVICE__PRE_CHECKS__TOO_SHORT_RATIO": "20"},
            "service.pre_checks.too_short_ratio",
            "service.pre_checks.too_long_ratio",
        ),
        ({"ACLARAI_QUEUE__BACKOFF_BASE_S": "600"}, "queue.backoff_base_s", "queue.backoff_max_s"),
    ],
)
def test_keys_that_contradict_each_other_are_named_both(
    env: dict[str, str], first: str, second: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(env=env)
    message = str(info.value)
    assert first in message and second in message and "\n" not in message
    assert info.value.key == first
    assert "the shipped defaults" in message or all(name in message for name in env)


def test_a_contradiction_names_where_each_key_was_set(tmp_path: Path) -> None:
    user = tmp_path / "user.yaml"
    user.write_text("service:\n  thresholds:\n    review_above: 0.7\n")
    with pytest.raises(ConfigError) as info:
        load_config(user, env={"ACLARAI_SERVICE__THRESHOLDS__PASS_ABOVE": "0.6"})
    assert str(info.value) == (
        f"invalid config: service.thresholds.review_above (0.7, from {user}) must be below "
        "service.thresholds.pass_above (0.6, from ACLARAI_SERVICE__THRESHOLDS__PASS_ABOVE)"
    )
    assert info.value.source == str(user)
