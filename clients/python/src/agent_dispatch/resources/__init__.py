from .runs import AsyncRuns, AsyncRunsWithRawResponse, Runs, RunsWithRawResponse

__all__ = ["Runs", "AsyncRuns", "RunsWithRawResponse", "AsyncRunsWithRawResponse"]
