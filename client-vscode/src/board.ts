/**
 * The board as the server answers `cardrunner/board` (docs/lsp-extensions.md), parsed defensively,
 * and the few decisions the Cards view and the board panel share: what a card's line says, which
 * context value its menus key on, and where a card may be dragged.
 *
 * Why pure: the server owns the board (grouping, live runs, actions); the client only renders it.
 * Keeping the parsing and the wording free of `vscode` lets them be unit-tested under plain Node.
 */
import { costEstimated, ServerCommand } from "./protocol";
import { formatCost, formatRound } from "./statusItems";

export const COLUMNS = ["New", "In Work", "Review", "Done", "Failed"] as const;
export type Column = (typeof COLUMNS)[number];
/** States a card may be moved to by hand; In Work and Review belong to runs. */
export const MANUAL: readonly Column[] = ["New", "Done", "Failed"];

export interface BoardAction {
  title: string;
  command: string;
  arguments: unknown[];
}

export interface BoardRun {
  runId: string;
  state: string;
  round: number;
  maxRounds: number;
  costUsd: number;
  /** The cost is an estimate (a replayed run, or usage the endpoint did not report). */
  estimated: boolean;
  tool: string | null;
  summary: string;
  logPath: string | null;
}

/** What a run of a card is likely to cost: the range the card shows, the basis its tooltip gives. */
export interface CardForecast {
  /** `≈ $0.10–$0.39 a run`, `cost unknown` */
  text: string;
  /** `from 2 past runs of this card`, `estimate from the card's size, ~9k tokens to start` */
  basis: string;
}

export interface BoardCard {
  uri: string;
  path: string;
  title: string;
  state: Column;
  category: string | null;
  line: number;
  run: BoardRun | null;
  review: { diffPath: string; files: string[]; message: string } | null;
  lastReason: string | null;
  problems: string[];
  forecast: CardForecast | null;
  actions: BoardAction[];
}

export interface Board {
  columns: Array<{ state: Column; cards: BoardCard[] }>;
  running: number;
  waitingReviews: number;
}

export const EMPTY_BOARD: Board = {
  columns: COLUMNS.map((state) => ({ state, cards: [] })),
  running: 0,
  waitingReviews: 0,
};

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): string => (typeof v === "string" ? v : "");
const num = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);
const optStr = (v: unknown): string | null => (typeof v === "string" && v !== "" ? v : null);
const column = (v: unknown): Column | undefined => COLUMNS.find((c) => c === v);

function parseRun(raw: unknown): BoardRun | null {
  if (!isObj(raw)) {
    return null;
  }
  return {
    runId: str(raw.runId),
    state: str(raw.state),
    round: num(raw.round),
    maxRounds: num(raw.maxRounds),
    costUsd: num(raw.costUsd),
    estimated: costEstimated(raw),
    tool: optStr(raw.tool),
    summary: str(raw.summary),
    logPath: optStr(raw.logPath),
  };
}

/**
 * The server's forecast line (`≈ $0.10–$0.39 a run (from 2 past runs of this card)`, run/forecast.py)
 * split at its basis, which it writes last in parentheses: the range stays short enough for a card,
 * the basis goes to the tooltip. A line without one is shown whole.
 */
export function parseForecast(raw: unknown): CardForecast | null {
  const line = optStr(raw);
  if (line === null) {
    return null;
  }
  const at = line.indexOf(" (");
  if (at <= 0 || !line.endsWith(")")) {
    return { text: line, basis: "" };
  }
  return { text: line.slice(0, at), basis: line.slice(at + 2, -1) };
}

function parseAction(raw: unknown): BoardAction | undefined {
  if (!isObj(raw) || typeof raw.title !== "string" || typeof raw.command !== "string") {
    return undefined;
  }
  return { title: raw.title, command: raw.command, arguments: Array.isArray(raw.arguments) ? raw.arguments : [] };
}

function parseCard(raw: unknown): BoardCard | undefined {
  const state = isObj(raw) ? column(raw.state) : undefined;
  if (!isObj(raw) || typeof raw.uri !== "string" || state === undefined) {
    return undefined;
  }
  const review = isObj(raw.review)
    ? {
        diffPath: str(raw.review.diffPath),
        files: Array.isArray(raw.review.files)
          ? raw.review.files.filter((f): f is string => typeof f === "string")
          : [],
        message: str(raw.review.message),
      }
    : null;
  return {
    uri: raw.uri,
    path: str(raw.path),
    title: str(raw.title) || raw.uri.split("/").pop() || raw.uri,
    state,
    category: optStr(raw.category),
    line: num(raw.line),
    run: parseRun(raw.run),
    review,
    lastReason: optStr(raw.lastReason),
    problems: Array.isArray(raw.problems) ? raw.problems.filter((p): p is string => typeof p === "string") : [],
    forecast: parseForecast(raw.forecast),
    actions: (Array.isArray(raw.actions) ? raw.actions : [])
      .map(parseAction)
      .filter((a): a is BoardAction => a !== undefined),
  };
}

/** The board from a server answer; anything malformed is left out, never thrown. */
export function parseBoard(raw: unknown): Board {
  const columns = isObj(raw) && Array.isArray(raw.columns) ? raw.columns : [];
  const cards = columns.flatMap((c) => (isObj(c) && Array.isArray(c.cards) ? c.cards : [])).map(parseCard);
  const known = cards.filter((c): c is BoardCard => c !== undefined);
  return {
    columns: COLUMNS.map((state) => ({ state, cards: known.filter((c) => c.state === state) })),
    running: isObj(raw) ? num(raw.running) : 0,
    waitingReviews: isObj(raw) ? num(raw.waitingReviews) : 0,
  };
}

/** What the line after a card's title says: the live run, a waiting review, or why it failed. */
export function cardDetail(card: BoardCard): string {
  if (card.review) {
    return `waiting for review · ${card.review.files.length} file(s)`;
  }
  if (card.state === "In Work" && card.run && (card.run.state === "running" || card.run.state === "review")) {
    const tool = card.run.tool ? ` · ${card.run.tool}` : "";
    return `${formatRound(card.run)} · ${formatCost(card.run.costUsd, card.run.estimated)}${tool}`;
  }
  if (card.state === "Failed" && card.lastReason) {
    return card.lastReason;
  }
  if (card.problems.length) {
    return `${card.problems.length} problem(s)`;
  }
  return card.category ?? "";
}

/**
 * The tree item's context value: space-separated flags that `view/item/context` when-clauses match
 * with regular expressions (`viewItem =~ /\brunning\b/`), so each inline action shows only when the
 * server offers it.
 */
export function contextValue(card: BoardCard): string {
  const flags = ["card"];
  const has = (command: string) => card.actions.some((a) => a.command === command);
  if (has(ServerCommand.runCard)) flags.push("runnable");
  if (has(ServerCommand.cancelRun)) flags.push("running");
  if (has(ServerCommand.resumeRun)) flags.push("resumable");
  if (card.review) flags.push("review");
  if (card.run?.logPath || has(ServerCommand.showLog)) flags.push("log");
  return flags.join(" ");
}

/** Whether a drag from `from` to `to` is a manual move the server accepts. */
export function canMove(from: Column, to: Column): boolean {
  return from !== to && MANUAL.includes(to) && MANUAL.includes(from);
}

/** What the board page may ask the extension to do; the panel carries it out (boardPanel.ts). */
export interface BoardIntents {
  action(command: string, args: unknown[]): void;
  move(uri: string, state: Column): void;
  open(uri: string): void;
}

/**
 * Carry out one message from the board's webview, if it is one the board offers — else nothing.
 *
 * Why checked here: the page renders cards whose titles and text are a stranger's, and whatever
 * runs in it can post any message. So the page's word is never taken for what to run: an action
 * runs only if a card on the board the extension holds offers exactly that command with exactly
 * those arguments (and it is one of cardrunner's own); a move or an open names a card on that
 * board, and a move goes by the card's real column, not the one the page claims.
 */
export function handleBoardMessage(board: Board, message: unknown, intents: BoardIntents, ready: () => void): boolean {
  if (!isObj(message) || typeof message.type !== "string") {
    return false;
  }
  const cards = board.columns.flatMap((c) => c.cards);
  const card = typeof message.uri === "string" ? cards.find((c) => c.uri === message.uri) : undefined;
  switch (message.type) {
    case "ready":
      ready();
      return true;
    case "action": {
      const { command } = message;
      const args = Array.isArray(message.arguments) ? message.arguments : [];
      const wanted = JSON.stringify(args);
      const offered =
        typeof command === "string" &&
        command.startsWith("cardrunner.") &&
        cards.some((c) => c.actions.some((a) => a.command === command && JSON.stringify(a.arguments) === wanted));
      if (offered) {
        intents.action(command, args);
      }
      return offered;
    }
    case "move": {
      const to = COLUMNS.find((c) => c === message.to);
      if (card && to && canMove(card.state, to)) {
        intents.move(card.uri, to);
        return true;
      }
      return false;
    }
    case "open":
      if (card && card.uri.startsWith("file:")) {
        intents.open(card.uri);
        return true;
      }
      return false;
    default:
      return false;
  }
}

/** The first action of a card whose command is `command` (its arguments as the server gave them). */
export function actionFor(card: BoardCard, command: string): BoardAction | undefined {
  return card.actions.find((a) => a.command === command);
}

/** A new card's file name and text: the template every card starts from. */
export function newCard(title: string): { fileName: string; text: string } {
  const slug =
    title
      .normalize("NFKD")
      .replace(/[^\x00-\x7f]/g, "")
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-+|-+$/g, "") || "card";
  const safeTitle = /[:#'"]/.test(title) ? JSON.stringify(title) : title;
  const text = [
    "---",
    `title: ${safeTitle}`,
    "state: New",
    "category: Improvement",
    "---",
    "What should change, and why. Name the screen, command or file where it shows.",
    "",
    "## Acceptance criteria",
    "",
    "- A check someone can do in the running app, with the values they will see.",
    "",
  ].join("\n");
  return { fileName: `${slug}.md`, text };
}

/** `cardrunner demo` with the interpreter the server runs with (its `lsp` swapped for `demo`). */
export function demoArgv(serverArgv: readonly string[] | undefined): string[] {
  const argv = serverArgv?.length ? [...serverArgv] : ["cardrunner", "lsp"];
  const at = argv.lastIndexOf("lsp");
  return at >= 0 ? [...argv.slice(0, at), "demo", ...argv.slice(at + 1)] : ["cardrunner", "demo"];
}
