"""Stand-ins for the outside world that tests, benchmarks and the editor end-to-end test share.

`fake_api` serves a scripted Messages API over real HTTP (so the real `anthropic` SDK, its retries
and its streaming parser are exercised), with strict request validation, prompt-cache simulation
and fault injection. Nothing here is imported by the language server or the CLI at run time.
"""
