import assert from "node:assert/strict";
import { describe, it } from "node:test";
import vm from "node:vm";
import { parseBoard, parseForecast } from "../../src/board";
import { boardHtml, pageBoard } from "../../src/boardPage";

/** Just enough of the DOM for the board's page script: elements, attributes, text, listeners. */
class Element {
  readonly attrs: Record<string, string> = {};
  children: Array<Element | string> = [];
  readonly listeners: Record<string, Array<(event: unknown) => void>> = {};
  readonly classList = { add: () => undefined, remove: () => undefined };
  constructor(readonly tag: string) {}
  setAttribute(name: string, value: string): void {
    this.attrs[name] = String(value);
  }
  append(...children: Array<Element | string>): void {
    this.children.push(...children);
  }
  replaceChildren(): void {
    this.children = [];
  }
  addEventListener(type: string, listener: (event: unknown) => void): void {
    (this.listeners[type] ??= []).push(listener);
  }
  get text(): string {
    return this.children.map((c) => (typeof c === "string" ? c : c.text)).join("");
  }
  all(match: (e: Element) => boolean): Element[] {
    const below = this.children.filter((c): c is Element => typeof c !== "string");
    return below.flatMap((c) => [...(match(c) ? [c] : []), ...c.all(match)]);
  }
}

/** Run the page's script as the webview would and hand it `board`, as the panel posts it. */
function renderPage(board: unknown): { root: Element; posted: unknown[] } {
  const html = boardHtml("vscode-resource:", "n0nce");
  const script = /<script nonce="n0nce">([\s\S]*)<\/script>/.exec(html)?.[1];
  assert.ok(script, "the page has its one nonce'd script");
  const root = new Element("main");
  const window = new Element("window");
  const posted: unknown[] = [];
  vm.runInNewContext(script, {
    document: { getElementById: () => root, createElement: (tag: string) => new Element(tag) },
    window,
    // posted as the webview posts: a copy (a structured clone), not the page's own object
    acquireVsCodeApi: () => ({ postMessage: (m: unknown) => posted.push(JSON.parse(JSON.stringify(m))) }),
  });
  for (const listener of window.listeners.message ?? []) {
    listener({ data: { type: "board", board } });
  }
  return { root, posted };
}

const LINE = "≈ $0.04–$0.11 a run (from 2 past runs of this card)";

function card(title: string, forecast: unknown): Record<string, unknown> {
  const uri = `file:///w/cards/${title}.md`;
  return { uri, path: `cards/${title}.md`, title, state: "New", line: 1, problems: [], forecast, actions: [] };
}

describe("parseForecast", () => {
  it("splits the server's line into the range and its basis", () => {
    assert.deepEqual(parseForecast(LINE), { text: "≈ $0.04–$0.11 a run", basis: "from 2 past runs of this card" });
    assert.deepEqual(parseForecast("cost unknown (no price for m in the model table)"), {
      text: "cost unknown",
      basis: "no price for m in the model table",
    });
  });

  it("shows a line without a basis whole, and nothing for no line", () => {
    assert.deepEqual(parseForecast("≈ $0.04 a run"), { text: "≈ $0.04 a run", basis: "" });
    for (const raw of [null, undefined, "", 3]) {
      assert.equal(parseForecast(raw), null);
    }
  });
});

describe("the board page", () => {
  const board = pageBoard(
    parseBoard({
      columns: [
        { state: "New", cards: [card("priced", LINE), card("unread", null)] },
        { state: "Failed", cards: [{ ...card("broken", null), state: "Failed", problems: ["no title"] }] },
      ],
    }),
  );

  it("shows each card's forecast under its line, its basis as the tooltip", () => {
    const { root, posted } = renderPage(board);
    assert.deepEqual(posted, [{ type: "ready" }]);
    const [priced, unread] = root.all((e) => e.tag === "article");
    const [shown] = priced!.all((e) => e.attrs.class === "forecast");
    assert.equal(shown?.text, "≈ $0.04–$0.11 a run");
    assert.equal(shown?.attrs.title, "What a run is likely to cost: from 2 past runs of this card");
    assert.deepEqual(
      unread!.all((e) => e.attrs.class === "forecast"),
      [],
      "no forecast line for a card without one",
    );
  });

  it("words each card's line as the Cards view does", () => {
    const { root } = renderPage(board);
    const details = root.all((e) => e.attrs.class === "detail").map((e) => e.text);
    assert.deepEqual(details, ["", "", "1 problem(s)"]);
  });

  it("keeps the one policy: nothing but the nonce'd style and script, no remote resource", () => {
    const html = boardHtml("vscode-resource:", "n0nce");
    assert.match(html, /default-src 'none'; style-src vscode-resource: 'nonce-n0nce'; script-src 'nonce-n0nce'/);
    assert.doesNotMatch(html, /https?:\/\//);
  });
});
