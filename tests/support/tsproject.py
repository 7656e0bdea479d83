"""The TypeScript project's test set-up, written here: the published package ships no tests.

No npm package small enough for these tests was found that ships its TypeScript sources together
with vitest tests and a vitest config. So the TypeScript project is a substitute, and exactly
this much of it is ours: tiny-invariant 1.3.3's published `src/tiny-invariant.ts` (real, as
npm serves it) is kept; its package.json's `scripts` and `devDependencies` (yarn, jest, rollup)
are replaced by an `npm test` that runs tsc, prettier and vitest with coverage — the shape of
script issue 23 was found on — and this module writes the tsconfig, the prettier and vitest
configs and the vitest tests below.
"""

from __future__ import annotations

import json
from pathlib import Path

DEV_DEPENDENCIES = {
    "typescript": "5.9.3",
    "prettier": "3.6.2",
    "vitest": "4.1.12",
    "vite": "8.3.8",
    "@vitest/coverage-v8": "4.1.12",
    "@types/node": "20.19.9",
}
NPM_TEST = "tsc -b tsconfig.build.json && prettier --check src test && vitest run --coverage"

TSCONFIG = """{
  "compilerOptions": {
    "target": "ES2019",
    "module": "ESNext",
    "moduleResolution": "Bundler",
    "strict": true,
    "declaration": true,
    "composite": true,
    "types": ["node"],
    "outDir": "dist/types",
    "rootDir": "src"
  },
  "include": ["src/tiny-invariant.ts"]
}
"""

PRETTIER = '{ "singleQuote": true, "printWidth": 100 }\n'

VITEST_CONFIG = """import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: { include: ['test/**/*.test.ts'], coverage: { provider: 'v8', include: ['src/**/*.ts'] } },
});
"""

TESTS = """import { describe, expect, it } from 'vitest';
import invariant from '../src/tiny-invariant';

describe('invariant', () => {
  it('returns on a truthy condition', () => {
    expect(() => invariant(true, 'never')).not.toThrow();
  });

  it('throws the prefix alone without a message', () => {
    expect(() => invariant(false)).toThrow(/^Invariant failed$/);
  });

  it('appends a message', () => {
    expect(() => invariant(0, 'zero')).toThrow('Invariant failed: zero');
  });

  it('calls a message function only on failure', () => {
    let calls = 0;
    const message = () => {
      calls += 1;
      return 'lazy';
    };
    invariant('yes', message);
    expect(calls).toBe(0);
    expect(() => invariant('', message)).toThrow('Invariant failed: lazy');
    expect(calls).toBe(1);
  });

  it('narrows the type', () => {
    const value: { name: string } | null = { name: 'Alex' };
    invariant(value, 'Expected a person');
    expect(value.name).toBe('Alex');
  });
});
"""


def add_tests(project: Path) -> None:
    """Give the unpacked package its `npm test`, configs and tests (before `npm install`)."""
    manifest = project / "package.json"
    data = json.loads(manifest.read_text())
    data["scripts"] = {"test": NPM_TEST}
    data["devDependencies"] = DEV_DEPENDENCIES
    manifest.write_text(json.dumps(data, indent=2) + "\n")
    (project / "tsconfig.build.json").write_text(TSCONFIG)
    (project / ".prettierrc").write_text(PRETTIER)
    (project / "vitest.config.ts").write_text(VITEST_CONFIG)
    (project / "test").mkdir(exist_ok=True)
    (project / "test" / "invariant.test.ts").write_text(TESTS)
