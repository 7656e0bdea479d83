"""The agent: the loop, its events, limits, compaction and verdict, and the ports it talks through.

Entry point: `agent.loop.Loop`. Ports: `agent.model` (the model), `agent.toolpool` (tools),
`agent.review` (the approver). Nothing here knows of editors, terminals or files.
"""
