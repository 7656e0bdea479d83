/**
 * The run view's page: styles from the theme, one nonce'd script that draws the runs it is sent.
 *
 * Why apart from runView.ts: the page is its own program (it runs in the webview, not the
 * extension host) and follows VS Code's webview guidelines as the board's does — theme colours
 * only (CSS variables), a strict Content-Security-Policy with a nonce, no remote resources, text
 * set as text (never as HTML), buttons reachable by keyboard. It keeps one thing of its own:
 * which tool calls the user unfolded, so a redraw every round does not fold them again; and it
 * follows the run (scrolls to the newest round) while the user is at the bottom.
 */
import { webviewPage } from "./webviewPage";

export function runViewHtml(cspSource: string, nonce: string): string {
  return webviewPage({
    cspSource,
    nonce,
    title: "cardrunner run",
    main: '<main id="run" aria-label="cardrunner run" aria-live="polite"></main>',
    style: STYLE,
    script: SCRIPT,
  });
}

const STYLE = `
body { padding: 8px 12px; color: var(--vscode-foreground); background: var(--vscode-editor-background);
  font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); }
header { position: sticky; top: 0; background: var(--vscode-editor-background); padding: 4px 0 8px;
  border-bottom: 1px solid var(--vscode-panel-border, transparent); z-index: 1; }
h1 { font-size: 1.2em; margin: 0 0 4px; }
.state { display: inline-block; margin-left: 8px; padding: 0 6px; border-radius: 8px; font-size: 11px;
  background: var(--vscode-badge-background); color: var(--vscode-badge-foreground); vertical-align: middle; }
.budget, .muted { color: var(--vscode-descriptionForeground); }
.result { margin-top: 4px; font-weight: 600; }
.result.failed { color: var(--vscode-errorForeground); }
.actions { display: flex; flex-wrap: wrap; gap: 4px; margin-top: 6px; }
button { background: var(--vscode-button-secondaryBackground); color: var(--vscode-button-secondaryForeground);
  border: 0; border-radius: 2px; padding: 2px 8px; cursor: pointer; font: inherit; }
button.primary { background: var(--vscode-button-background); color: var(--vscode-button-foreground); }
button:hover { background: var(--vscode-button-hoverBackground); color: var(--vscode-button-foreground); }
button:focus-visible, summary:focus-visible { outline: 1px solid var(--vscode-focusBorder); outline-offset: 1px; }
h2 { font-size: 11px; text-transform: uppercase; letter-spacing: .04em; margin: 12px 0 6px;
  color: var(--vscode-sideBarSectionHeader-foreground, var(--vscode-foreground)); }
ol.criteria { margin: 0; padding-left: 0; list-style: none; }
ol.criteria li { margin: 2px 0 6px; padding-left: 1.6em; text-indent: -1.6em; overflow-wrap: anywhere; }
.mark { display: inline-block; width: 1.6em; text-indent: 0; font-weight: 700; }
li.verified .mark { color: var(--vscode-testing-iconPassed, var(--vscode-charts-green)); }
li.failed .mark { color: var(--vscode-testing-iconFailed, var(--vscode-errorForeground)); }
li.stale .mark, li.pending .mark { color: var(--vscode-descriptionForeground); }
.evidence { display: block; text-indent: 0; color: var(--vscode-descriptionForeground); }
section.round { border-left: 2px solid var(--vscode-panel-border, var(--vscode-descriptionForeground));
  padding: 2px 0 4px 10px; margin: 8px 0; }
section.round.now { border-left-color: var(--vscode-focusBorder); }
.round-head { font-size: 11px; color: var(--vscode-descriptionForeground); }
.narration { white-space: pre-wrap; overflow-wrap: anywhere; margin: 4px 0; }
details { margin: 2px 0; }
summary { cursor: pointer; font-family: var(--vscode-editor-font-family); font-size: var(--vscode-editor-font-size);
  overflow-wrap: anywhere; }
summary .args { color: var(--vscode-descriptionForeground); }
details.error summary { color: var(--vscode-errorForeground); }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 4px 0 6px; padding: 6px 8px; max-height: 24em; overflow: auto;
  background: var(--vscode-textCodeBlock-background, var(--vscode-editorWidget-background));
  font-family: var(--vscode-editor-font-family); font-size: var(--vscode-editor-font-size); }
`;

const SCRIPT = `
const vscode = acquireVsCodeApi();
const root = document.getElementById("run");
const unfolded = new Set((vscode.getState() || {}).unfolded || []);
const MARK = { verified: "✓", failed: "✗", stale: "!", pending: "○" };
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  for (const child of children) node.append(child);
  return node;
}
function button(label, type, primary) {
  const b = el("button", primary ? { class: "primary" } : {}, label);
  b.addEventListener("click", () => vscode.postMessage({ type }));
  return b;
}
function call(c, key, open) {
  const details = el("details", { class: c.isError ? "error" : "", "data-key": key });
  const ms = c.ms === null || c.ms === undefined ? "" : " · " + c.ms + " ms";
  details.append(el("summary", {}, (c.isError ? "✗ " : "") + c.name + " ", el("span", { class: "args" }, c.arguments + ms)));
  details.append(el("pre", {}, c.result || "(no output)"));
  if (open || unfolded.has(key)) details.open = true;
  details.addEventListener("toggle", () => {
    details.open ? unfolded.add(key) : unfolded.delete(key);
    vscode.setState({ unfolded: [...unfolded] });
  });
  return details;
}
function header(run, t) {
  const head = el("header");
  const h1 = el("h1", {}, t.title || "run");
  h1.append(el("span", { class: "state" }, t.state));
  head.append(h1, el("div", { class: "budget" }, run.budget));
  if (run.result) head.append(el("div", { class: "result " + t.state }, run.result));
  const actions = el("div", { class: "actions" });
  if (t.state === "running") actions.append(button("■ Cancel", "cancel"));
  if (t.state === "review") actions.append(button("Review changes", "review", true));
  if (run.logPath) actions.append(button("Open raw log", "rawLog"));
  head.append(actions);
  return head;
}
function criteria(t) {
  const list = el("ol", { class: "criteria" });
  t.criteria.forEach((c, i) => {
    const li = el("li", { class: c.status, "data-status": c.status });
    li.append(el("span", { class: "mark", "aria-label": c.status }, MARK[c.status] || "?"), (i + 1) + ". " + c.text);
    if (c.evidence) li.append(el("span", { class: "evidence" }, c.evidence));
    list.append(li);
  });
  if (!t.criteria.length) list.append(el("li", { class: "muted" }, "the card has no acceptance criteria"));
  return list;
}
function rounds(t) {
  const all = el("div", { class: "rounds" });
  if (t.omittedRounds) all.append(el("p", { class: "muted" }, t.omittedRounds + " earlier rounds not shown while the run goes on (Open raw log: all of them)"));
  for (const r of t.rounds) {
    const section = el("section", { class: "round", "data-round": String(r.round) });
    section.append(el("div", { class: "round-head" }, "Round " + r.round + " · " + (t.estimated ? "~$" : "$") + r.costUsd.toFixed(4) + (t.estimated ? " (estimate)" : "")));
    if (r.text) section.append(el("p", { class: "narration" }, r.text));
    r.calls.forEach((c, i) => section.append(call(c, r.round + ":" + (c.id || i), false)));
    all.append(section);
  }
  if (t.state === "review") {
    const now = el("section", { class: "round now" });
    now.append(el("div", { class: "round-head" }, "now"));
    now.append(el("p", { class: "waiting" }, "waiting for your review (Review changes)"));
    all.append(now);
  } else if (t.tool) {
    const now = el("section", { class: "round now" });
    now.append(el("div", { class: "round-head" }, "now"));
    now.append(call({ name: t.tool, arguments: "running…", result: t.output.join("\\n"), isError: false }, "now", true));
    all.append(now);
  } else if (t.state === "running" && t.round <= 0) {
    all.append(el("p", { class: "muted" }, "baseline check: the project's tests run once as they are, before the model's first round"));
  }
  return all;
}
function render(run) {
  const atEnd = window.innerHeight + window.scrollY >= document.body.scrollHeight - 24;
  root.replaceChildren();
  const t = run.timeline;
  if (!t) {
    root.append(el("p", { class: "muted" }, run.message));
    return;
  }
  root.append(header(run, t), el("h2", {}, "Acceptance criteria"), criteria(t), el("h2", {}, "Rounds"), rounds(t));
  if (atEnd && run.live) window.scrollTo(0, document.body.scrollHeight);
}
window.addEventListener("message", (event) => { if (event.data.type === "run") render(event.data.run); });
vscode.postMessage({ type: "ready" });
`;
