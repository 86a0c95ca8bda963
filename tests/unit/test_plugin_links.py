"""The Airflow plugin's links point at the trend dashboard and the night's report."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

PLUGIN = Path(__file__).resolve().parents[2] / "plugins" / "omni_links.py"


def _plugin():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("omni_links", PLUGIN)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_links_and_macros(monkeypatch) -> None:
    from omni_tasks.config import get_settings

    monkeypatch.setenv("OMNI_GRAFANA_URL", "https://grafana.example/")
    monkeypatch.setenv("OMNI_PUBLIC_URL", "https://airflow.example/")
    get_settings.cache_clear()
    m = _plugin()
    key = SimpleNamespace(run_id="scheduled__2026-11-28T02:00:00+00:00", dag_id="omni_nightly")
    grafana, report = m.OmniLinksPlugin.global_operator_extra_links
    assert grafana.get_link(None, ti_key=key) == (
        "https://grafana.example/d/omni-seed-tts-trend?var-benchmark=seed_tts_en"
    )
    renamed = SimpleNamespace(run_id=key.run_id, dag_id="seed_tts_nightly")  # its alias's runs
    assert grafana.get_link(None, ti_key=renamed) == grafana.get_link(None, ti_key=key)
    other = SimpleNamespace(run_id=key.run_id, dag_id="someone_elses_etl")
    assert grafana.get_link(None, ti_key=other) == report.get_link(None, ti_key=other) == ""
    assert report.name == "Nightly report"  # read from the refresh task's XCom: the cluster test
    assert m.report_url("2026-11-28") == (
        "https://airflow.example/omni/reports/seed_tts_en_2026-11-28.html"
    )
    assert {f.__name__ for f in m.OmniLinksPlugin.macros} == {"grafana_url", "report_url"}
    monkeypatch.setenv("OMNI_BENCHMARK", "daily_omni")  # the default benchmark, configured
    get_settings.cache_clear()
    assert grafana.get_link(None, ti_key=key).endswith("?var-benchmark=daily_omni")
    assert m.report_url("2026-11-28").endswith("/omni/reports/daily_omni_2026-11-28.html")
    evidence, webhook, slack = m.OmniLinksPlugin().fastapi_apps  # Airflow reads an instance
    assert evidence["url_prefix"] == "/omni"
    assert webhook["url_prefix"] == "/omni-github"  # GitHub's PR webhook, HMAC-checked
    assert slack["url_prefix"] == "/omni-slack"  # Slack's buttons, signature-checked
    monkeypatch.delenv("OMNI_PUBLIC_URL")
    get_settings.cache_clear()
    assert m.report_url("2026-11-28") == ""  # no public URL: no link, never file://


def test_loading_the_plugin_builds_no_app() -> None:
    """Every Airflow process loads plugins (a worker's task, the CLI, the scheduler); only the
    API server reads the apps and the middleware, so loading the plugin imports none of them."""
    probe = (
        f"import runpy, sys; m = runpy.run_path({str(PLUGIN)!r}); "
        "print(sorted(n for n in sys.modules if n.startswith(('omni_tasks.', 'fastapi'))))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    for heavy in ("fastapi", "omni_tasks.evidence.serving", "omni_tasks.dag_support.submit"):
        assert f"'{heavy}'" not in loaded, heavy
    assert "'omni_tasks.evidence.links'" not in loaded  # links import theirs when asked
