"""``/agent/runs``: create, list, retrieve, follow up, cancel, approve plans, answer budgets and follow the
transcript of runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Literal
from urllib.parse import quote

from pydantic import TypeAdapter

from .._base_client import RequestOptions, model_parser
from .._pagination import AsyncRunsPage, AsyncRunsPager, RunsPage
from .._response import RAW_RESPONSE_HEADER, async_to_raw_response_wrapper, to_raw_response_wrapper
from .._streaming import AsyncEventStream, EventStream, _StreamSpec  # pyright: ignore[reportPrivateUsage]
from .._types import NOT_GIVEN, NotGiven, TimeoutTypes
from ..types import (
    AgentConfig,
    AgentConfigParam,
    AttachmentParam,
    BudgetResponse,
    CreateRunResponse,
    FollowupResponse,
    ListAttachmentsResponse,
    ListRunsResponse,
    RunEventsResponse,
    RunItem,
    RunState,
    SortBy,
    SortOrder,
)

if TYPE_CHECKING:
    from .._client import AsyncDispatch, Dispatch

__all__ = ["Runs", "AsyncRuns", "RunsWithRawResponse", "AsyncRunsWithRawResponse"]

_RUNS = "agent/runs"
_STRING = TypeAdapter(str)

_parse_create = model_parser(CreateRunResponse.model_validate)
_parse_run = model_parser(RunItem.model_validate)
_parse_list = model_parser(ListRunsResponse.model_validate)
_parse_followup = model_parser(FollowupResponse.model_validate)
_parse_budget = model_parser(BudgetResponse.model_validate)
_parse_events = model_parser(RunEventsResponse.model_validate)
_parse_cancel = model_parser(_STRING.validate_python)
_parse_attachments = model_parser(ListAttachmentsResponse.model_validate)


def _run_path(run_id: str, *rest: str) -> str:
    if not run_id:
        raise ValueError("run_id must be a non-empty string")
    return "/".join((_RUNS, quote(run_id, safe=""), *rest))


def _timestamp(value: str | datetime | None) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)  # naive datetimes are taken as UTC
    return value.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _oz_fields(
    team: bool | None,
    interactive: bool | None,
    conversation_id: str | None,
    parent_run_id: str | None,
    mode: str | None,
) -> dict[str, object]:
    """Oz's create fields that were given: ``team`` (Dispatch runs are always the team's), ``interactive``,
    ``conversation_id`` (continue that run: the prompt becomes its follow-up), ``parent_run_id`` (a run of
    the same team) and ``mode`` (``normal`` or ``plan``)."""
    given = {
        "team": team,
        "interactive": interactive,
        "conversation_id": conversation_id,
        "parent_run_id": parent_run_id,
        "mode": mode,
    }
    return {name: value for name, value in given.items() if value is not None}


def _attachments_field(attachments: Sequence[AttachmentParam] | None) -> dict[str, object]:
    """``attachments`` when given: images (base64) sent with a create or follow-up."""
    return {} if attachments is None else {"attachments": [dict(a) for a in attachments]}


def _create_body(
    prompt: str | None,
    title: str | None,
    config: AgentConfigParam | AgentConfig | None,
    skill: str | None,
    metadata: Mapping[str, str] | None,
    on_behalf_of: str | Mapping[str, object] | None,
    extra_body: Mapping[str, object] | None,
) -> dict[str, object]:
    body: dict[str, object] = {}
    if prompt is not None:
        body["prompt"] = prompt
    if title is not None:
        body["title"] = title
    if config is not None:
        body["config"] = (
            config.model_dump(mode="json", exclude_none=True) if isinstance(config, AgentConfig) else dict(config)
        )
    if skill is not None:
        body["skill"] = skill
    if metadata is not None:
        body["metadata"] = dict(metadata)
    if on_behalf_of is not None:
        body["on_behalf_of"] = on_behalf_of if isinstance(on_behalf_of, str) else dict(on_behalf_of)
    body.update(extra_body or {})
    return body


def _followup_body(message: str, mode: str | None, extra_body: Mapping[str, object] | None) -> dict[str, object]:
    body: dict[str, object] = {"message": message}
    if mode is not None:
        body["mode"] = mode
    body.update(extra_body or {})
    return body


def _approve_body(action: str, message: str | None, extra_body: Mapping[str, object] | None) -> dict[str, object]:
    body: dict[str, object] = {"action": action}
    if message is not None:
        body["message"] = message
    body.update(extra_body or {})
    return body


def _budget_body(action: str, amount_usd: float | None, extra_body: Mapping[str, object] | None) -> dict[str, object]:
    body: dict[str, object] = {"action": action}
    if amount_usd is not None:
        body["amount_usd"] = amount_usd
    body.update(extra_body or {})
    return body


def _list_query(
    *,
    limit: int | None,
    cursor: str | None,
    sort_by: SortBy | str | None,
    sort_order: SortOrder | str | None,
    state: RunState | str | Sequence[str] | None,
    name: str | None,
    model_id: str | None,
    creator: str | None,
    source: str | Sequence[str] | None,
    environment_id: str | None,
    skill_spec: str | None,
    skill: str | None,
    created_after: str | datetime | None,
    created_before: str | datetime | None,
    updated_after: str | datetime | None,
    q: str | None,
    metadata: Mapping[str, str] | None,
    artifact_type: str | None,
    schedule_id: str | None,
    ancestor_run_id: str | None,
    executor: str | None,
    execution_location: str | None,
    task_status: str | Sequence[str] | None,
    extra_query: Mapping[str, object] | None,
) -> dict[str, object]:
    states: list[str] | None = None
    if state is not None:
        states = [state] if isinstance(state, str) else list(state)  # repeated ?state= means OR
    query: dict[str, object] = {
        "limit": limit,
        "cursor": cursor,
        "sort_by": sort_by,
        "sort_order": sort_order,
        "state": states,
        "name": name,
        "model_id": model_id,
        "creator": creator,
        "source": [source] if isinstance(source, str) else (list(source) if source is not None else None),
        "environment_id": environment_id,
        "skill_spec": skill_spec,
        "skill": skill,
        "created_after": _timestamp(created_after),
        "created_before": _timestamp(created_before),
        "updated_after": _timestamp(updated_after),
        "q": q,
        "artifact_type": artifact_type,
        "schedule_id": schedule_id,
        "ancestor_run_id": ancestor_run_id,
        "executor": executor,
        "execution_location": execution_location,
        "task_status": [task_status] if isinstance(task_status, str) else _listed(task_status),
    }
    # Oz's metadata filter: one metadata[key]=value pair per entry, all of which must match.
    for key, value in (metadata or {}).items():
        query[f"metadata[{key}]"] = value
    query.update(extra_query or {})
    return {k: v for k, v in query.items() if v is not None}


def _listed(values: Sequence[str] | None) -> list[str] | None:
    return list(values) if values is not None else None


def _later_state_in(page: RunEventsResponse) -> bool:
    return any(event.type == "state" for event in page.events)


class Runs:
    """``client.runs``: the typed surface of ``/agent/runs``."""

    def __init__(self, client: Dispatch) -> None:
        self._client = client

    @property
    def with_raw_response(self) -> RunsWithRawResponse:
        return RunsWithRawResponse(self)

    def create(
        self,
        *,
        prompt: str | None = None,
        title: str | None = None,
        config: AgentConfigParam | AgentConfig | None = None,
        skill: str | None = None,
        metadata: Mapping[str, str] | None = None,
        team: bool | None = None,
        interactive: bool | None = None,
        conversation_id: str | None = None,
        parent_run_id: str | None = None,
        mode: str | None = None,
        attachments: Sequence[AttachmentParam] | None = None,
        on_behalf_of: str | Mapping[str, object] | None = None,
        idempotency_key: str | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        extra_body: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> CreateRunResponse:
        """Queues a run (``POST /agent/runs``). ``prompt`` is required unless ``skill`` is given.
        ``on_behalf_of`` is either a user id or email of the team (the Warp Platform API's form: the run is
        that user's; admin keys and agent identities' keys only) or Dispatch's ``{creator, source,
        trigger_url}`` extension, honoured for admin keys.

        Every attempt of one call carries the same Idempotency-Key (``idempotency_key`` or a generated
        one), so retries never create a second run.
        """
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="POST",
                path=_RUNS,
                params=extra_query,
                json_data=_create_body(
                    prompt,
                    title,
                    config,
                    skill,
                    metadata,
                    on_behalf_of,
                    {
                        **_oz_fields(team, interactive, conversation_id, parent_run_id, mode),
                        **_attachments_field(attachments),
                        **(extra_body or {}),
                    },
                ),
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
                idempotency_key=idempotency_key,
            ),
            _parse_create,
        )

    def list(
        self,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        sort_by: SortBy | str | None = None,
        sort_order: SortOrder | str | None = None,
        state: RunState | str | Sequence[str] | None = None,
        name: str | None = None,
        model_id: str | None = None,
        creator: str | None = None,
        source: str | Sequence[str] | None = None,
        environment_id: str | None = None,
        skill_spec: str | None = None,
        skill: str | None = None,
        created_after: str | datetime | None = None,
        created_before: str | datetime | None = None,
        updated_after: str | datetime | None = None,
        q: str | None = None,
        metadata: Mapping[str, str] | None = None,
        artifact_type: str | None = None,
        schedule_id: str | None = None,
        ancestor_run_id: str | None = None,
        executor: str | None = None,
        execution_location: str | None = None,
        task_status: str | Sequence[str] | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> RunsPage:
        """The first page of runs (``GET /agent/runs``); iterate over it for every run across pages.

        ``limit`` is the page size (1-500). A walk sees every run exactly once if its sort key does not
        change meanwhile: sort by ``created_at`` to walk runs that are still executing.
        """
        query = _list_query(
            limit=limit,
            cursor=cursor,
            sort_by=sort_by,
            sort_order=sort_order,
            state=state,
            name=name,
            model_id=model_id,
            creator=creator,
            source=source,
            environment_id=environment_id,
            skill_spec=skill_spec,
            skill=skill,
            created_after=created_after,
            created_before=created_before,
            updated_after=updated_after,
            q=q,
            metadata=metadata,
            artifact_type=artifact_type,
            schedule_id=schedule_id,
            ancestor_run_id=ancestor_run_id,
            executor=executor,
            execution_location=execution_location,
            task_status=task_status,
            extra_query=extra_query,
        )

        def fetch(page_cursor: str | None, headers: Mapping[str, str] | None) -> RunsPage:
            return self._client._request(  # pyright: ignore[reportPrivateUsage]
                RequestOptions(
                    method="GET",
                    path=_RUNS,
                    params={**query, "cursor": page_cursor} if page_cursor else query,
                    headers=headers,
                    timeout=timeout,
                    max_retries=max_retries,
                ),
                lambda response: RunsPage(_parse_list(response), next_page),
            )

        def next_page(next_cursor: str) -> RunsPage:
            return fetch(next_cursor, _without_raw_marker(extra_headers))

        return fetch(cursor, extra_headers)

    def retrieve(
        self,
        run_id: str,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> RunItem:
        """One run (``GET /agent/runs/{run_id}``); NotFoundError for an unknown or other team's run."""
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="GET",
                path=_run_path(run_id),
                params=extra_query,
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_run,
        )

    def followup(
        self,
        run_id: str,
        *,
        message: str,
        mode: str | None = None,
        attachments: Sequence[AttachmentParam] | None = None,
        idempotency_key: str | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        extra_body: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> FollowupResponse:
        """Sends a follow-up (``POST /agent/runs/{run_id}/followups``); a finished run runs again."""
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="POST",
                path=_run_path(run_id, "followups"),
                params=extra_query,
                json_data=_followup_body(message, mode, {**_attachments_field(attachments), **(extra_body or {})}),
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
                idempotency_key=idempotency_key,
            ),
            _parse_followup,
        )

    def list_handoff_attachments(
        self,
        run_id: str,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> ListAttachmentsResponse:
        """The run's image attachments, from its create and its follow-ups
        (``GET /agent/runs/{run_id}/handoff/attachments``), each with a signed ``download_url``."""
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="GET",
                path=_run_path(run_id, "handoff", "attachments"),
                params=extra_query,
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_attachments,
        )

    def cancel(
        self,
        run_id: str,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> str:
        """Cancels a QUEUED or INPROGRESS run and returns its id; BadRequestError if it is terminal."""
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="POST",
                path=_run_path(run_id, "cancel"),
                params=extra_query,
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_cancel,
        )

    def approve(
        self,
        run_id: str,
        *,
        action: Literal["approve", "revise"],
        message: str | None = None,
        idempotency_key: str | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        extra_body: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> FollowupResponse:
        """Answers a run whose plan waits for approval (``POST /agent/runs/{run_id}/approve``, a Dispatch
        extension; the run is BLOCKED with ``status_message.reason`` ``awaiting_approval``). ``approve``
        carries the plan out in the same run (``message``: an optional note); ``revise`` has it planned
        again with ``message`` as the changes (required). Any other run: ConflictError."""
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="POST",
                path=_run_path(run_id, "approve"),
                params=extra_query,
                json_data=_approve_body(action, message, extra_body),
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
                idempotency_key=idempotency_key,
            ),
            _parse_followup,
        )

    def budget(
        self,
        run_id: str,
        *,
        action: Literal["extend", "stop"],
        amount_usd: float | None = None,
        idempotency_key: str | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        extra_body: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> BudgetResponse:
        """Answers a run that waits for budget (``POST /agent/runs/{run_id}/budget``, a Dispatch extension;
        the run is BLOCKED with ``status_message.reason`` ``awaiting_budget``). ``extend`` lets it spend
        ``amount_usd`` more (required) and it continues; ``stop`` has it deliver what it has. The requester
        may extend within their own monthly budgets, an admin beyond them (else PermissionDeniedError).
        Any other run: ConflictError."""
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="POST",
                path=_run_path(run_id, "budget"),
                params=extra_query,
                json_data=_budget_body(action, amount_usd, extra_body),
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
                idempotency_key=idempotency_key,
            ),
            _parse_budget,
        )

    def list_events(
        self,
        run_id: str,
        *,
        after: int | None = None,
        limit: int | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> RunEventsResponse:
        """One page of the transcript as JSON (``GET /agent/runs/{run_id}/events?after=&limit=``)."""
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="GET",
                path=_run_path(run_id, "events"),
                params={"after": after, "limit": limit, **(extra_query or {})},
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_events,
        )

    def events(
        self,
        run_id: str,
        *,
        after: int | None = None,
        until_terminal: bool = True,
        extra_headers: Mapping[str, str] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> EventStream:
        """Follows the run's transcript live (Server-Sent Events), from the event after ``after``.

        A dropped connection is resumed with Last-Event-ID: nothing is lost or repeated. Iteration ends
        when the run reaches a terminal state (unless ``until_terminal=False``), at once if it already
        had when ``after`` was sent. Connects lazily, on the first ``next()``.
        """
        path = _run_path(run_id, "events")

        def has_later_state(seq: int) -> bool:
            after_seq = seq
            while True:
                page = self.list_events(
                    run_id,
                    after=after_seq,
                    limit=1000,
                    extra_headers=extra_headers,
                    timeout=timeout,
                    max_retries=max_retries,
                )
                if _later_state_in(page):
                    return True
                if not page.events:
                    return False
                after_seq = page.next_after

        def finished_after(seq: int) -> bool:
            if has_later_state(seq):
                return False
            run = self.retrieve(run_id, extra_headers=extra_headers, timeout=timeout, max_retries=max_retries)
            return run.is_terminal

        spec = _StreamSpec(path, after, until_terminal, dict(extra_headers or {}), timeout, max_retries)
        return EventStream(self._client, spec, has_later_state, finished_after)


class AsyncRuns:
    """``client.runs`` of :class:`AsyncDispatch`: the same methods as :class:`Runs`, awaited."""

    def __init__(self, client: AsyncDispatch) -> None:
        self._client = client

    @property
    def with_raw_response(self) -> AsyncRunsWithRawResponse:
        return AsyncRunsWithRawResponse(self)

    async def create(
        self,
        *,
        prompt: str | None = None,
        title: str | None = None,
        config: AgentConfigParam | AgentConfig | None = None,
        skill: str | None = None,
        metadata: Mapping[str, str] | None = None,
        team: bool | None = None,
        interactive: bool | None = None,
        conversation_id: str | None = None,
        parent_run_id: str | None = None,
        mode: str | None = None,
        attachments: Sequence[AttachmentParam] | None = None,
        on_behalf_of: str | Mapping[str, object] | None = None,
        idempotency_key: str | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        extra_body: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> CreateRunResponse:
        """Queues a run; see :meth:`Runs.create`."""
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="POST",
                path=_RUNS,
                params=extra_query,
                json_data=_create_body(
                    prompt,
                    title,
                    config,
                    skill,
                    metadata,
                    on_behalf_of,
                    {
                        **_oz_fields(team, interactive, conversation_id, parent_run_id, mode),
                        **_attachments_field(attachments),
                        **(extra_body or {}),
                    },
                ),
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
                idempotency_key=idempotency_key,
            ),
            _parse_create,
        )

    def list(
        self,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        sort_by: SortBy | str | None = None,
        sort_order: SortOrder | str | None = None,
        state: RunState | str | Sequence[str] | None = None,
        name: str | None = None,
        model_id: str | None = None,
        creator: str | None = None,
        source: str | Sequence[str] | None = None,
        environment_id: str | None = None,
        skill_spec: str | None = None,
        skill: str | None = None,
        created_after: str | datetime | None = None,
        created_before: str | datetime | None = None,
        updated_after: str | datetime | None = None,
        q: str | None = None,
        metadata: Mapping[str, str] | None = None,
        artifact_type: str | None = None,
        schedule_id: str | None = None,
        ancestor_run_id: str | None = None,
        executor: str | None = None,
        execution_location: str | None = None,
        task_status: str | Sequence[str] | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> AsyncRunsPager:
        """``await`` it for the first page, or ``async for run in client.runs.list(...)`` for every run
        across pages; see :meth:`Runs.list`."""
        query = _list_query(
            limit=limit,
            cursor=cursor,
            sort_by=sort_by,
            sort_order=sort_order,
            state=state,
            name=name,
            model_id=model_id,
            creator=creator,
            source=source,
            environment_id=environment_id,
            skill_spec=skill_spec,
            skill=skill,
            created_after=created_after,
            created_before=created_before,
            updated_after=updated_after,
            q=q,
            metadata=metadata,
            artifact_type=artifact_type,
            schedule_id=schedule_id,
            ancestor_run_id=ancestor_run_id,
            executor=executor,
            execution_location=execution_location,
            task_status=task_status,
            extra_query=extra_query,
        )

        async def fetch(page_cursor: str | None, headers: Mapping[str, str] | None) -> AsyncRunsPage:
            return await self._client._request(  # pyright: ignore[reportPrivateUsage]
                RequestOptions(
                    method="GET",
                    path=_RUNS,
                    params={**query, "cursor": page_cursor} if page_cursor else query,
                    headers=headers,
                    timeout=timeout,
                    max_retries=max_retries,
                ),
                lambda response: AsyncRunsPage(_parse_list(response), next_page),
            )

        async def next_page(next_cursor: str) -> AsyncRunsPage:
            return await fetch(next_cursor, _without_raw_marker(extra_headers))

        async def first_page() -> AsyncRunsPage:
            return await fetch(cursor, extra_headers)

        return AsyncRunsPager(first_page)

    async def retrieve(
        self,
        run_id: str,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> RunItem:
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="GET",
                path=_run_path(run_id),
                params=extra_query,
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_run,
        )

    async def followup(
        self,
        run_id: str,
        *,
        message: str,
        mode: str | None = None,
        attachments: Sequence[AttachmentParam] | None = None,
        idempotency_key: str | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        extra_body: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> FollowupResponse:
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="POST",
                path=_run_path(run_id, "followups"),
                params=extra_query,
                json_data=_followup_body(message, mode, {**_attachments_field(attachments), **(extra_body or {})}),
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
                idempotency_key=idempotency_key,
            ),
            _parse_followup,
        )

    async def list_handoff_attachments(
        self,
        run_id: str,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> ListAttachmentsResponse:
        """The run's image attachments, from its create and its follow-ups
        (``GET /agent/runs/{run_id}/handoff/attachments``), each with a signed ``download_url``."""
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="GET",
                path=_run_path(run_id, "handoff", "attachments"),
                params=extra_query,
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_attachments,
        )

    async def cancel(
        self,
        run_id: str,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> str:
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="POST",
                path=_run_path(run_id, "cancel"),
                params=extra_query,
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_cancel,
        )

    async def approve(
        self,
        run_id: str,
        *,
        action: Literal["approve", "revise"],
        message: str | None = None,
        idempotency_key: str | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        extra_body: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> FollowupResponse:
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="POST",
                path=_run_path(run_id, "approve"),
                params=extra_query,
                json_data=_approve_body(action, message, extra_body),
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
                idempotency_key=idempotency_key,
            ),
            _parse_followup,
        )

    async def budget(
        self,
        run_id: str,
        *,
        action: Literal["extend", "stop"],
        amount_usd: float | None = None,
        idempotency_key: str | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        extra_body: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> BudgetResponse:
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="POST",
                path=_run_path(run_id, "budget"),
                params=extra_query,
                json_data=_budget_body(action, amount_usd, extra_body),
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
                idempotency_key=idempotency_key,
            ),
            _parse_budget,
        )

    async def list_events(
        self,
        run_id: str,
        *,
        after: int | None = None,
        limit: int | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> RunEventsResponse:
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="GET",
                path=_run_path(run_id, "events"),
                params={"after": after, "limit": limit, **(extra_query or {})},
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_events,
        )

    def events(
        self,
        run_id: str,
        *,
        after: int | None = None,
        until_terminal: bool = True,
        extra_headers: Mapping[str, str] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> AsyncEventStream:
        """``async for event in client.runs.events(run_id)``; see :meth:`Runs.events`."""
        path = _run_path(run_id, "events")

        async def has_later_state(seq: int) -> bool:
            after_seq = seq
            while True:
                page = await self.list_events(
                    run_id,
                    after=after_seq,
                    limit=1000,
                    extra_headers=extra_headers,
                    timeout=timeout,
                    max_retries=max_retries,
                )
                if _later_state_in(page):
                    return True
                if not page.events:
                    return False
                after_seq = page.next_after

        async def finished_after(seq: int) -> bool:
            if await has_later_state(seq):
                return False
            run = await self.retrieve(run_id, extra_headers=extra_headers, timeout=timeout, max_retries=max_retries)
            return run.is_terminal

        spec = _StreamSpec(path, after, until_terminal, dict(extra_headers or {}), timeout, max_retries)
        return AsyncEventStream(self._client, spec, has_later_state, finished_after)


def _without_raw_marker(headers: Mapping[str, str] | None) -> Mapping[str, str] | None:
    # Only the first page of a raw list call is returned raw; the pages after it are fetched parsed.
    if headers is None:
        return None
    return {k: v for k, v in headers.items() if k.lower() != RAW_RESPONSE_HEADER.lower()}


class RunsWithRawResponse:
    """``client.with_raw_response.runs``: the same methods, returning :class:`APIResponse`."""

    def __init__(self, runs: Runs) -> None:
        self.create = to_raw_response_wrapper(runs.create)
        self.list = to_raw_response_wrapper(runs.list)
        self.retrieve = to_raw_response_wrapper(runs.retrieve)
        self.followup = to_raw_response_wrapper(runs.followup)
        self.list_handoff_attachments = to_raw_response_wrapper(runs.list_handoff_attachments)
        self.cancel = to_raw_response_wrapper(runs.cancel)
        self.approve = to_raw_response_wrapper(runs.approve)
        self.budget = to_raw_response_wrapper(runs.budget)
        self.list_events = to_raw_response_wrapper(runs.list_events)


class AsyncRunsWithRawResponse:
    def __init__(self, runs: AsyncRuns) -> None:
        self.create = async_to_raw_response_wrapper(runs.create)
        self.list = async_to_raw_response_wrapper(runs.list)
        self.retrieve = async_to_raw_response_wrapper(runs.retrieve)
        self.followup = async_to_raw_response_wrapper(runs.followup)
        self.list_handoff_attachments = async_to_raw_response_wrapper(runs.list_handoff_attachments)
        self.cancel = async_to_raw_response_wrapper(runs.cancel)
        self.approve = async_to_raw_response_wrapper(runs.approve)
        self.budget = async_to_raw_response_wrapper(runs.budget)
        self.list_events = async_to_raw_response_wrapper(runs.list_events)
