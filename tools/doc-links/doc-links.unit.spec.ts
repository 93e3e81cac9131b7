import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { checkDocumentLinks, documentFiles, formatProblems, type LinkProblem } from './doc-links';

const REPOSITORY = fileURLToPath(new URL('../../', import.meta.url));

let folders: string[] = [];

afterEach(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
  folders = [];
});

/** A repository of its own in the temporary folder, holding `files` (path → content). */
function repository(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'oncegate-doc-links-'));
  folders.push(root);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), content);
  }
  return root;
}

/** The problems of every document of a fixture repository, as `line href` pairs of one file. */
function problemsOf(files: Record<string, string>, file = 'README.md'): Array<Pick<LinkProblem, 'line' | 'href'>> {
  const root = repository(files);
  return checkDocumentLinks(root, [file]).map(({ line, href }) => ({ line, href }));
}

const TARGET = [
  '# Target',
  '',
  '## Running on PostgreSQL',
  '',
  '## The services apart — `npm run bench -- split`',
  '',
  '## Notes',
  '',
  '## Notes',
  '',
  '### SQLite driver on Node 24: better-sqlite3 12.6.2 → node:sqlite',
  '',
  '## Fish &amp; chips',
  '',
  '<a id="explicit-id"></a>',
  'Text with an inline <a name="inline-name"></a> anchor.',
  '',
].join('\n');

describe('doc-links: relative links and their anchors', () => {
  it('given links to existing files, folders and headings by GitHub slug, then nothing is reported', () => {
    const readme = [
      '# Readme',
      '',
      '## Own section',
      '',
      '[a file](docs/target.md), [a folder](docs/), [a code file](src/main.ts), [an image](docs/image.png)',
      '[heading](docs/target.md#running-on-postgresql) [code in heading](docs/target.md#the-services-apart--npm-run-bench----split)',
      '[second of two](docs/target.md#notes-1) [punctuation](docs/target.md#sqlite-driver-on-node-24-better-sqlite3-1262--nodesqlite)',
      '[entity](docs/target.md#fish--chips) [a id](docs/target.md#explicit-id) [a name](docs/target.md#inline-name)',
      '[own](#own-section) [line](src/main.ts#L3) [lines](src/main.ts#L3-L5) [query](docs/target.md?plain=1#notes)',
      '[spaced](docs/with%20space.md) [bracketed](<docs/with space.md>) [root-relative](/docs/target.md#notes) [external](https://example.com/a?b=c#d)',
      '[reference][ref] <https://example.com> [mail](mailto:someone@example.com)',
      '',
      '| table | link |',
      '|---|---|',
      '| cell | [in a table](docs/target.md#notes) |',
      '',
      '- list',
      '  - [nested](docs/target.md#notes)',
      '',
      '> [quoted](docs/target.md)',
      '',
      '[ref]: docs/target.md#running-on-postgresql',
    ].join('\n');
    const problems = problemsOf({
      'README.md': readme,
      'docs/target.md': TARGET,
      'docs/with space.md': '# Spaced\n',
      'docs/image.png': 'png',
      'src/main.ts': 'export {};\n',
    });
    expect(problems).toEqual([]);
  });

  it('given a link to a missing file, then it is reported with its line', () => {
    expect(problemsOf({ 'README.md': '# Readme\n\nSee [the guide](docs/missing.md).\n' })).toEqual([
      { line: 3, href: 'docs/missing.md' },
    ]);
  });

  it('given an anchor that no heading of the target makes, then it is reported with the anchors that were probably meant', () => {
    const root = repository({
      'README.md': '# Readme\n\n[short](docs/target.md#the-services-apart)\n',
      'docs/target.md': TARGET,
    });
    const [problem, ...rest] = checkDocumentLinks(root, ['README.md']);
    expect(rest).toEqual([]);
    expect(problem).toMatchObject({ file: 'README.md', line: 3, href: 'docs/target.md#the-services-apart' });
    expect(problem?.reason).toContain('did you mean #the-services-apart--npm-run-bench----split?');
  });

  it('given broken links of every kind, then each is reported once, at its line', () => {
    const readme = [
      '# Readme', //                                   1
      '', //                                           2
      '[own](#not-a-heading)', //                      3
      '[first of two](docs/target.md#notes-2)', //     4
      '[into code](src/main.ts#main)', //              5
      '[into a folder](docs/#notes)', //               6
      '[outside](../elsewhere.md)', //                 7
      '![missing image](docs/missing.png)', //         8
      '[empty anchor](docs/target.md#)', //            9
      '[reference][ref]', //                          10
      '', //                                          11
      '[ref]: docs/gone.md', //                       12
    ].join('\n');
    expect(problemsOf({ 'README.md': readme, 'docs/target.md': TARGET, 'src/main.ts': 'export {};\n' })).toEqual([
      { line: 3, href: '#not-a-heading' },
      { line: 4, href: 'docs/target.md#notes-2' },
      { line: 5, href: 'src/main.ts#main' },
      { line: 6, href: 'docs/#notes' },
      { line: 7, href: '../elsewhere.md' },
      { line: 8, href: 'docs/missing.png' },
      { line: 9, href: 'docs/target.md#' },
      // A reference's destination is reported once, where it is first used.
      { line: 10, href: 'docs/gone.md' },
    ]);
  });

  it('given links inside code blocks and code spans, then they are text and are not checked', () => {
    const readme = [
      '# Readme',
      '',
      'Write `[text](missing-span.md)` for a link.',
      '',
      '```md',
      '[fenced](missing-fenced.md)',
      '```',
      '',
      '    [indented](missing-indented.md)',
      '',
      '[real](missing-real.md)',
    ].join('\n');
    expect(problemsOf({ 'README.md': readme })).toEqual([{ line: 11, href: 'missing-real.md' }]);
  });

  it('given a heading inside a code block, then it makes no anchor', () => {
    const readme = '# Readme\n\n```sh\n# not-a-heading\n```\n\n[x](#not-a-heading)\n';
    expect(problemsOf({ 'README.md': readme })).toEqual([{ line: 7, href: '#not-a-heading' }]);
  });
});

describe('doc-links: external links', () => {
  it('given external links, then they are not fetched, and only malformed ones or other schemes are reported', () => {
    const readme = [
      '# Readme',
      '',
      '[ok](https://modelcontextprotocol.io/specification) [ok](http://127.0.0.1:8787/mcp)',
      '[no host](https://)',
      '[bad port](http://example.com:99999/)',
      '[scheme](ftp://example.com/file)',
      '[no address](mailto:)',
      '[spaced](<https://example.com/a b>)',
    ].join('\n');
    expect(problemsOf({ 'README.md': readme })).toEqual([
      { line: 4, href: 'https://' },
      { line: 5, href: 'http://example.com:99999/' },
      { line: 6, href: 'ftp://example.com/file' },
      { line: 7, href: 'mailto:' },
      { line: 8, href: 'https://example.com/a b' },
    ]);
  });
});

describe('doc-links: this repository', () => {
  it('given the documents a newcomer reads, then they are found by their patterns', () => {
    const files = documentFiles(REPOSITORY);
    expect(files).toEqual(expect.arrayContaining(['README.md', 'docs/design.md', 'docs/events/README.md', 'examples/README.md', 'libs/journal/README.md']));
    expect(files.some((file) => file.includes('node_modules'))).toBe(false);
  });

  it('given every document of the repository, then every relative link and anchor resolves', () => {
    const problems = checkDocumentLinks(REPOSITORY, documentFiles(REPOSITORY));
    expect(formatProblems(problems), 'broken links (file:line: destination: why)').toBe('');
  });
});
