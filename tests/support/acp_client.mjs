// A card run through the official TypeScript ACP client (@agentclientprotocol/sdk), as an
// editor's agent panel drives an agent: spawn `python -m cardrunner acp`, initialize without
// clientCapabilities, open a session, send one prompt, answer each permission request with its
// allow_once option, close stdin, wait for the agent to exit. Prints one JSON object: the
// answers, every session update as the SDK delivered it, every permission request.
// Usage: node acp_client.mjs PYTHON ROOT PROMPT
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk";

const [python, root, text] = process.argv.slice(2);
const agent = spawn(python, ["-m", "cardrunner", "acp"], {
  cwd: root,
  stdio: ["pipe", "pipe", "inherit"],
});
const exited = new Promise((resolve) => agent.on("exit", (code) => resolve(code)));
const stream = ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
const updates = [];
const asked = [];

const app = client({ name: "cardrunner-test" })
  .onNotification(methods.client.session.update, ({ params }) => {
    updates.push(params.update);
  })
  .onRequest(methods.client.session.requestPermission, ({ params }) => {
    asked.push({ ...params, seen: updates.length });
    const allow = params.options.find((o) => o.kind === "allow_once");
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  });

const answers = await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request(methods.agent.initialize, { protocolVersion: PROTOCOL_VERSION });
  const session = await ctx.request(methods.agent.session.new, { cwd: root, mcpServers: [] });
  const prompt = [{ type: "text", text }];
  const stop = await ctx.request(methods.agent.session.prompt, {
    sessionId: session.sessionId,
    prompt,
  });
  return { init, stop };
});
agent.stdin.end();
const exitCode = await exited;
process.stdout.write(JSON.stringify({ ...answers, updates, asked, exitCode }));
