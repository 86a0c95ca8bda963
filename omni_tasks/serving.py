"""The evidence behind an alert over HTTP: the nightly HTML reports and clip audio, as a FastAPI
app the Airflow plugin mounts on the API server (`/omni`).

Airflow does not authenticate plugin apps, so this one does: every route depends on Airflow's
own `get_user` (a JWT in `Authorization: Bearer …` or the UI's session cookie). Names from the
URL are single path components; audio is read only through the audio path rule (under the
audio root), never from anywhere a URL names.
"""

from __future__ import annotations

from typing import Any

from fastapi import Depends, FastAPI, HTTPException
from fastapi.responses import FileResponse, Response

from omni_tasks.audio import AudioUnavailable, load_audio_bytes
from omni_tasks.config import get_settings
from omni_tasks.names import InvalidName, path_component


def _component(value: str) -> str:
    try:
        if path_component(value) != value:
            raise InvalidName(value)
    except InvalidName:
        raise HTTPException(status_code=404, detail="not found") from None
    return value


def evidence_app(auth: Any = None) -> FastAPI:
    """The app; `auth` is the dependency that authenticates (default: Airflow's get_user)."""
    if auth is None:
        from airflow.api_fastapi.core_api.security import get_user

        auth = get_user
    app = FastAPI(title="omni-tasks evidence", dependencies=[Depends(auth)])

    @app.get("/reports/{name}")
    def report(name: str) -> FileResponse:
        _component(name)
        path = get_settings().home / "reports" / name
        if not name.endswith(".html") or not path.is_file():
            raise HTTPException(status_code=404, detail="no such report")
        return FileResponse(path, media_type="text/html")

    @app.get("/audio/{run_key}/{name}")
    def audio(run_key: str, name: str) -> Response:
        _component(run_key)
        _component(name)
        uri = f"{get_settings().audio_root_url}/{run_key}/{name}"
        try:
            data = load_audio_bytes(uri)  # the audio path rule: under the audio root only
        except AudioUnavailable:
            raise HTTPException(status_code=404, detail="no such clip") from None
        return Response(data, media_type="audio/wav")

    return app
