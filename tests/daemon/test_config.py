from __future__ import annotations

from pathlib import Path

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
