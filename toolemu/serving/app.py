"""The HTTP and WebSocket app of ``toolemu serve``: OpenEnv's protocol over a ``SessionPool``.

WebSocket ``/ws`` is OpenEnv's session protocol (one connection, one env: ``reset``, ``step``, ``state``,
``close`` messages; ``observation``, ``state`` and ``error`` replies), which OpenEnv's ``EnvClient`` and the
trainers built on it speak. HTTP ``/reset``, ``/step`` and ``/state`` take OpenEnv's request and response shapes;
where OpenEnv's HTTP calls are stateless, ours name a session: ``/reset`` opens one (its id is in the
observation) and ``/step``, ``/state`` and ``DELETE /sessions/{id}`` pass it back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from fastapi import FastAPI, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse, Response
from openenv.core.env_server.serialization import deserialize_action, serialize_observation
from openenv.core.env_server.types import (
    HealthResponse,
    HealthStatus,
    ResetResponse,
    SchemaResponse,
    StepResponse,
    WSErrorCode,
    WSErrorResponse,
    WSObservationResponse,
    WSStateResponse,
)
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from toolemu.core.errors import CapacityError, EnvStateError, Error, InfraError
from toolemu.serving.environment import metadata_of
from toolemu.serving.models import ToolEmuAction, ToolEmuObservation, ToolEmuState
from toolemu.serving.sessions import Session, SessionPool

T = TypeVar("T")

CLOSE_IDLE = 1001
"""WebSocket close code of a session the server closed on its own (idle, shutdown): "going away"."""
CLOSE_AT_CAPACITY = 1013
"""WebSocket close code of a session refused at the bound: "try again later"."""
REFUSAL_WAIT_S = 5.0
"""How long a refused WebSocket waits for its first message, to answer it with the refusal."""


class ResetParams(BaseModel):
    """A reset's parameters (WebSocket ``reset`` data, HTTP ``/reset`` body)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seed: int | None = Field(default=None, ge=0)
    """The episode's seed."""
    episode_id: str | None = Field(default=None, max_length=255)
    """An id for the episode (default: a fresh one)."""
    case: str | None = None
    """A suite server's case to run (default: sampled); a single-case server takes its own id or nothing."""
    session_id: str | None = None
    """HTTP only: reset this session instead of opening one."""


class StepParams(BaseModel):
    """An HTTP ``/step`` body: OpenEnv's ``action`` and ``timeout_s``, and the session."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    action: dict[str, JsonValue]
    session_id: str | None = None
    timeout_s: float | None = Field(default=None, gt=0)
    request_id: str | None = Field(default=None, max_length=255)


def make_app(pool: SessionPool) -> FastAPI:
    """The server's FastAPI app over ``pool`` (the reaper runs while the app does; every session is closed
    when it stops)."""

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        pool.start_reaper()
        try:
            yield
        finally:
            await pool.stop_reaper()
            await pool.close_all("server stopping")

    app = FastAPI(title=f"toolemu {pool.served.env_id} (OpenEnv protocol)", lifespan=lifespan)
    _add_info_routes(app, pool)
    _add_http_session_routes(app, pool)
    _add_websocket_route(app, pool)
    return app


def _loads(raw: str | bytes) -> Any:
    """JSON text as Python; nesting deep enough to exhaust the parser's recursion is a ``ValueError``."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise ValueError("the JSON is nested too deeply") from None


def _json(model: BaseModel, status: int = 200) -> Response:
    # pydantic writes NaN as null; Starlette's JSONResponse would refuse it
    return Response(model.model_dump_json(), status_code=status, media_type="application/json")


def _add_info_routes(app: FastAPI, pool: SessionPool) -> None:
    @app.get("/health")
    async def health() -> Response:
        return _json(HealthResponse(status=HealthStatus.HEALTHY))

    @app.get("/metadata")
    async def metadata() -> Response:
        return _json(metadata_of(pool.served))

    @app.get("/schema")
    async def schema() -> Response:
        return _json(SchemaResponse(action=ToolEmuAction.model_json_schema(),
                                    observation=ToolEmuObservation.model_json_schema(),
                                    state=ToolEmuState.model_json_schema()))

    @app.get("/sessions")
    async def sessions() -> JSONResponse:
        return JSONResponse({**pool.counts, "idle_timeout_s": pool.limits.idle_timeout_s})


def _http_status(e: BaseException) -> int:
    if isinstance(e, CapacityError):
        return 503
    if isinstance(e, EnvStateError):
        return 409
    if isinstance(e, InfraError):
        return 502
    if isinstance(e, (Error, ValidationError, ValueError)):  # ValueError: a body that is not the JSON asked for
        return 400
    return 500


def _error(e: BaseException) -> JSONResponse:
    return JSONResponse({"detail": f"{type(e).__name__}: {e}"}, status_code=_http_status(e))


def _add_http_session_routes(app: FastAPI, pool: SessionPool) -> None:
    async def body_of(request: Request) -> dict[str, Any]:
        raw = await request.body()
        data = _loads(raw) if raw.strip() else {}
        if not isinstance(data, dict):
            raise ValueError("the body is a JSON object")
        return data

    def session_of(session_id: str | None) -> Session:
        if session_id is None:
            raise EnvStateError("no `session_id`: HTTP calls name the session `/reset` opened (its observation's "
                                "`session_id`), or use the WebSocket /ws")
        session = pool.get(session_id)
        if session is None:
            raise EnvStateError(f"session {session_id} is not open (closed, idle past the timeout, or never "
                                f"opened); `/reset` without a session_id opens one")
        return session

    @app.post("/reset")
    async def reset(request: Request) -> Response:
        try:
            params = ResetParams.model_validate(await body_of(request))
            opened = params.session_id is None
            session = pool.open("http") if opened else session_of(params.session_id)
            try:
                obs = await pool.call(session, lambda: session.env.reset(
                    seed=params.seed, episode_id=params.episode_id, case=params.case))
            except BaseException:
                if opened:
                    await pool.close(session.id)
                raise
            return _json(ResetResponse(**serialize_observation(obs)))
        except (Error, ValidationError, ValueError) as e:
            return _error(e)

    @app.post("/step")
    async def step(request: Request) -> Response:
        try:
            params = StepParams.model_validate(await body_of(request))
            session = session_of(params.session_id)
            action = deserialize_action(params.action, ToolEmuAction)
            if not isinstance(action, ToolEmuAction):
                raise ValueError("the action is not a toolemu action")
            obs = await pool.call(session, lambda: session.env.step(action))
            return _json(StepResponse(**serialize_observation(obs)))
        except (Error, ValidationError, ValueError) as e:
            return _error(e)

    @app.get("/state")
    async def state(session_id: str | None = None) -> Response:
        try:
            session = session_of(session_id)
            return _json(await pool.call(session, lambda: session.env.state))
        except Error as e:
            return _error(e)

    @app.delete("/sessions/{session_id}")
    async def close(session_id: str) -> JSONResponse:
        closed = await pool.close(session_id)
        return JSONResponse({"session_id": session_id, "closed": closed}, status_code=200 if closed else 404)


def _ws_error(message: str, code: WSErrorCode, **more: JsonValue) -> str:
    return str(WSErrorResponse(data={"message": message, "code": code, **more}).model_dump_json())


async def _answer(pool: SessionPool, session: Session, message: dict[str, Any]) -> str | None:
    """The reply to one WebSocket message (``None``: the client closed the session)."""
    kind = message.get("type")
    call: Callable[[], BaseModel]
    if kind == "reset":
        data = message.get("data") or {}
        params = ResetParams.model_validate(data)
        if params.session_id is not None:
            raise ValueError("a WebSocket is its own session: `session_id` is for HTTP calls")
        call = lambda: session.env.reset(seed=params.seed, episode_id=params.episode_id,  # noqa: E731
                                         case=params.case)
    elif kind == "step":
        action = deserialize_action(message.get("data") or {}, ToolEmuAction)
        if not isinstance(action, ToolEmuAction):
            raise ValueError("the action is not a toolemu action")
        call = lambda: session.env.step(action)  # noqa: E731
    elif kind == "state":
        state = await pool.call(session, lambda: session.env.state)
        return str(WSStateResponse(data=state.model_dump(mode="json")).model_dump_json())
    elif kind == "close":
        return None
    else:
        return _ws_error(f"unknown message type {kind!r}; the types are reset, step, state and close",
                         WSErrorCode.UNKNOWN_TYPE)
    obs = await pool.call(session, call)
    if not isinstance(obs, ToolEmuObservation):
        raise TypeError(f"the env answered {type(obs).__name__}, not an observation")
    return str(WSObservationResponse(data=serialize_observation(obs)).model_dump_json())


async def _refuse(websocket: WebSocket, reason: str) -> None:
    """Answers a WebSocket beyond the bound: its first message gets the refusal, then the socket closes with it."""
    with contextlib.suppress(asyncio.TimeoutError, WebSocketDisconnect, RuntimeError):
        await asyncio.wait_for(websocket.receive_text(), REFUSAL_WAIT_S)
        await websocket.send_text(_ws_error(reason, WSErrorCode.CAPACITY_REACHED))
    with contextlib.suppress(RuntimeError, WebSocketDisconnect):
        await websocket.close(code=CLOSE_AT_CAPACITY, reason=reason[:123])


def _add_websocket_route(app: FastAPI, pool: SessionPool) -> None:
    @app.websocket("/ws")
    async def ws(websocket: WebSocket) -> None:
        await websocket.accept()
        try:
            session = pool.open("websocket")
        except CapacityError as e:
            await _refuse(websocket, str(e))
            return

        async def on_close(reason: str) -> None:
            await websocket.close(code=CLOSE_IDLE, reason=reason[:123])

        session.on_close = on_close
        try:
            while True:
                raw = await websocket.receive_text()
                try:
                    message = _loads(raw)
                    if not isinstance(message, dict):
                        raise ValueError("a message is a JSON object with a `type`")
                    reply = await _answer(pool, session, message)
                except json.JSONDecodeError as e:
                    reply = _ws_error(f"invalid JSON: {e}", WSErrorCode.INVALID_JSON)
                except (ValidationError, ValueError) as e:
                    reply = _ws_error(f"invalid message: {e}", WSErrorCode.VALIDATION_ERROR)
                except Error as e:
                    reply = _ws_error(f"{type(e).__name__}: {e}", WSErrorCode.EXECUTION_ERROR)
                if reply is None:
                    break
                await websocket.send_text(reply)
        except WebSocketDisconnect:
            pass
        finally:
            await pool.close(session.id)
            with contextlib.suppress(RuntimeError, WebSocketDisconnect):  # the client may be gone already
                await websocket.close()
