/**
 * The board's page: styles from the theme, one nonce'd script that draws the boards it is sent.
 *
 * Why apart from boardPanel.ts: the page is its own program (it runs in the webview, not the
 * extension host), and apart from `vscode` it can be run under plain Node by the unit tests. It
 * follows VS Code's webview guidelines: theme colours only (CSS variables), the strict
 * Content-Security-Policy of webviewPage.ts, no remote resources, text set as text (never as
 * HTML), keyboard-reachable buttons.
 */
import { cardDetail, type Board, type BoardCard, type Column } from "./board";
import { webviewPage } from "./webviewPage";

/** A card as the page gets it: the line under its title is worded here, once, by `cardDetail`
 * (the Cards view's words), so the page does not keep a second copy of them. */
export type PageCard = BoardCard & { detail: string };

/** The board as posted to the page. */
export function pageBoard(board: Board): { columns: Array<{ state: Column; cards: PageCard[] }> } {
  return {
    columns: board.columns.map((column) => ({
      ...column,
      cards: column.cards.map((card) => ({ ...card, detail: cardDetail(card) })),
    })),
  };
}

/** The page: styles from the theme, one nonce'd script that renders boards it is sent. */
export function boardHtml(cspSource: string, nonce: string): string {
  return webviewPage({
    cspSource,
    nonce,
    title: "cardrunner board",
    main: '<main id="board" aria-label="cardrunner board"></main>',
    style: STYLE,
    script: SCRIPT,
  });
}

const STYLE = `
body { padding: 8px; color: var(--vscode-foreground); background: var(--vscode-editor-background);
  font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); }
#board { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: 8px; align-items: start; }
/* auto-fit: at half width the columns wrap to a second row instead of leaving Done and Failed off-screen */
section { background: var(--vscode-sideBar-background, var(--vscode-editor-background));
  border: 1px solid var(--vscode-panel-border, transparent); border-radius: 4px; padding: 6px; min-height: 120px; }
section.drop { outline: 1px dashed var(--vscode-focusBorder); }
h2 { font-size: 11px; text-transform: uppercase; letter-spacing: .04em; margin: 2px 4px 8px;
  color: var(--vscode-sideBarSectionHeader-foreground, var(--vscode-foreground)); }
h2 .count { margin-left: 6px; padding: 0 6px; border-radius: 8px;
  background: var(--vscode-badge-background); color: var(--vscode-badge-foreground); }
article { background: var(--vscode-editor-background); border: 1px solid var(--vscode-widget-border, var(--vscode-panel-border, transparent));
  border-radius: 3px; padding: 6px 8px; margin-bottom: 6px; }
article[draggable="true"] { cursor: grab; }
article:focus-within, article:hover { border-color: var(--vscode-focusBorder); }
article .title { font-weight: 600; background: none; border: 0; padding: 0; color: var(--vscode-textLink-foreground);
  cursor: pointer; text-align: left; font: inherit; }
article .detail { color: var(--vscode-descriptionForeground); margin: 4px 0; }
article .forecast { color: var(--vscode-descriptionForeground); font-size: 0.9em; margin: -2px 0 4px; }
article.review { border-left: 3px solid var(--vscode-notificationsInfoIcon-foreground, var(--vscode-focusBorder)); }
article.failed { border-left: 3px solid var(--vscode-errorForeground); }
.actions { display: flex; flex-wrap: wrap; gap: 4px; }
.actions button { background: var(--vscode-button-secondaryBackground); color: var(--vscode-button-secondaryForeground);
  border: 0; border-radius: 2px; padding: 2px 6px; cursor: pointer; font: inherit; }
.actions button:first-child { background: var(--vscode-button-background); color: var(--vscode-button-foreground); }
.actions button:hover { background: var(--vscode-button-hoverBackground); color: var(--vscode-button-foreground); }
button:focus-visible { outline: 1px solid var(--vscode-focusBorder); outline-offset: 1px; }
`;

const SCRIPT = `
const vscode = acquireVsCodeApi();
const MANUAL = ["New", "Done", "Failed"];
const board = document.getElementById("board");
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  for (const child of children) node.append(child);
  return node;
}
function render(data) {
  board.replaceChildren();
  for (const column of data.columns) {
    const section = el("section", { "data-state": column.state, "aria-label": column.state });
    section.append(el("h2", {}, column.state, el("span", { class: "count" }, String(column.cards.length))));
    for (const card of column.cards) {
      const movable = MANUAL.includes(card.state);
      const classes = card.review ? "review" : card.state === "Failed" ? "failed" : "";
      const article = el("article", { class: classes, draggable: String(movable), "data-uri": card.uri, "data-state": card.state });
      const title = el("button", { class: "title", title: card.path }, card.title);
      title.addEventListener("click", () => vscode.postMessage({ type: "open", uri: card.uri }));
      const actions = el("div", { class: "actions" });
      for (const action of card.actions) {
        const button = el("button", {}, action.title);
        button.addEventListener("click", () => vscode.postMessage({ type: "action", command: action.command, arguments: action.arguments }));
        actions.append(button);
      }
      article.append(title, el("div", { class: "detail" }, card.detail));
      if (card.forecast) {
        const basis = card.forecast.basis ? "What a run is likely to cost: " + card.forecast.basis : "";
        article.append(el("div", { class: "forecast", title: basis }, card.forecast.text));
      }
      article.append(actions);
      article.addEventListener("dragstart", (e) => e.dataTransfer.setData("text/plain", JSON.stringify({ uri: card.uri, from: card.state })));
      section.append(article);
    }
    if (MANUAL.includes(column.state)) {
      section.addEventListener("dragover", (e) => { e.preventDefault(); section.classList.add("drop"); });
      section.addEventListener("dragleave", () => section.classList.remove("drop"));
      section.addEventListener("drop", (e) => {
        e.preventDefault();
        section.classList.remove("drop");
        const moved = JSON.parse(e.dataTransfer.getData("text/plain") || "{}");
        if (moved.uri) vscode.postMessage({ type: "move", uri: moved.uri, from: moved.from, to: column.state });
      });
    }
    board.append(section);
  }
}
window.addEventListener("message", (event) => { if (event.data.type === "board") render(event.data.board); });
vscode.postMessage({ type: "ready" });
`;
