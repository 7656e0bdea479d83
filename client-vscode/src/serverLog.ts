/**
 * The server's stderr, line by line, at the right log level.
 *
 * Why: the language client logs every stderr line as an error, so the server's ordinary Python
 * logging ("... INFO cardrunner.lsp: warmed up …") showed as red errors and hid the real ones.
 * Python logging lines carry their level; lines without one (a traceback's body) keep the level
 * of the line before, and a bare "Traceback" starts an error. Pure, so it is unit-tested.
 */

export type Level = "trace" | "debug" | "info" | "warn" | "error";

export interface ClassifiedLine {
  level: Level;
  /** The message without a leading timestamp (the output channel adds its own). */
  text: string;
}

const LEVELS: Record<string, Level> = {
  DEBUG: "debug",
  INFO: "info",
  WARNING: "warn",
  WARN: "warn",
  ERROR: "error",
  CRITICAL: "error",
  FATAL: "error",
};

// "2026-11-29 11:45:57,921 INFO name: msg" / "2026-11-29T11:45:57.921Z [INFO] msg" / "INFO:name:msg"
const STAMPED = /^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?Z?\s+\[?([A-Z]+)\]?\s+(.*)$/;
const BARE = /^\[?(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\]?[:\s]\s*(.*)$/;

export class StderrClassifier {
  private last: Level = "error";

  classify(line: string): ClassifiedLine {
    const match = STAMPED.exec(line) ?? BARE.exec(line);
    const level = match?.[1] !== undefined ? LEVELS[match[1]] : undefined;
    if (match && level) {
      this.last = level;
      return { level, text: match[2] ?? "" };
    }
    if (line.startsWith("Traceback (most recent call last)")) {
      this.last = "error";
    }
    return { level: this.last, text: line };
  }
}
