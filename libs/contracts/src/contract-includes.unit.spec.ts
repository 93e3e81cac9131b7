import { describe, expect, it } from 'vitest';
import { formatIssue } from './contract-issue';
import { checkContractFile } from './parse-contract-file';

/** A contract file with one read-only HTTP tool per name, and `include` lines when given. */
function contract(names: readonly string[], include: readonly string[] = []): string {
  const lines = ['version: 1'];
  if (include.length > 0) lines.push(`include: [${include.join(', ')}]`);
  lines.push('tools:');
  for (const name of names) {
    lines.push(
      `  - name: ${name}`,
      '    description: Read a build.',
      '    class: read_only',
      '    channel: http',
      '    target: demo/builds',
      '    input_schema: { type: object, properties: { id: { type: string } }, required: [id] }',
      '    http: { method: GET, url: "http://127.0.0.1:8790/builds/{{args.id}}" }',
      '    correlation_window: 30s',
    );
  }
  return `${lines.join('\n')}\n`;
}

/** The files a check may read, by path; any other path is a missing file, as the file system says it. */
function files(entries: Record<string, string>): (file: string) => string {
  return (file) => {
    const text = entries[file];
    if (text === undefined) throw Object.assign(new Error(`ENOENT: no such file or directory, open '${file}'`), { code: 'ENOENT' });
    return text;
  };
}

const problems = (result: ReturnType<typeof checkContractFile>) => (result.ok ? [] : result.issues.map(formatIssue));

describe('a contract file that includes others', () => {
  it('given a file including one beside it, when checked, then the tools of both are the contract, each with its own file', () => {
    const result = checkContractFile(contract(['get_build'], ['upstream-desk.yaml']), 'conf/tools.yaml', {
      readIncluded: files({ 'conf/upstream-desk.yaml': contract(['desk_list_tickets', 'desk_close_ticket']) }),
    });
    if (!result.ok) throw new Error(problems(result).join('\n'));
    expect(result.contract.tools.map((tool) => [tool.name, tool.source.file])).toEqual([
      ['get_build', 'conf/tools.yaml'],
      ['desk_list_tickets', 'conf/upstream-desk.yaml'],
      ['desk_close_ticket', 'conf/upstream-desk.yaml'],
    ]);
    expect(result.contract.included).toEqual(['conf/upstream-desk.yaml']);
  });

  it('given an included file that includes another, when checked, then the path is taken from the folder of the file that names it', () => {
    const result = checkContractFile(contract(['a'], ['more/b.yaml']), 'tools.yaml', {
      readIncluded: files({ 'more/b.yaml': contract(['b'], ['../c.yaml']), 'c.yaml': contract(['c']) }),
    });
    expect(result.ok ? result.contract.tools.map((tool) => tool.name) : problems(result)).toEqual(['a', 'b', 'c']);
  });

  it("given a mistake in an included file, then it is reported at that file's line and column", () => {
    const broken = contract(['desk_close_ticket']).replace('class: read_only', 'class: read_onyl');
    const result = checkContractFile(contract(['get_build'], ['desk.yaml']), 'tools.yaml', { readIncluded: files({ 'desk.yaml': broken }) });
    expect(problems(result)).toEqual([expect.stringMatching(/^desk\.yaml:5:12 tools\[0\]\.class: 'read_onyl' is not allowed/)]);
  });

  it('given the same tool name in two files, then the second is refused, naming where the first is', () => {
    const result = checkContractFile(contract(['get_build'], ['desk.yaml']), 'tools.yaml', { readIncluded: files({ 'desk.yaml': contract(['get_build']) }) });
    expect(problems(result)).toEqual(["desk.yaml:3:11 tools[0].name: duplicate tool name 'get_build' (first declared at tools[0] of tools.yaml, line 4)"]);
  });

  it('given an include of a missing file, of the including file itself, or of a file already included, then each is refused at its entry', () => {
    const result = checkContractFile(contract(['a'], ['missing.yaml', 'b.yaml', 'c.yaml']), 'tools.yaml', {
      readIncluded: files({ 'b.yaml': contract(['b'], ['tools.yaml']), 'c.yaml': contract(['c'], ['b.yaml']) }),
    });
    expect(problems(result)).toEqual([
      "tools.yaml:2:11 include[0]: cannot read 'missing.yaml': no such file",
      "b.yaml:2:11 include[0]: 'tools.yaml' is the file that includes the others",
      "c.yaml:2:11 include[0]: 'b.yaml' (b.yaml) is included already, by tools.yaml",
    ]);
  });

  it('given the text of a file that includes another and nothing to read it with, then the include is refused, not passed over', () => {
    expect(problems(checkContractFile(contract(['a'], ['b.yaml']), 'tools.yaml'))).toEqual([
      "tools.yaml:2:11 include[0]: 'b.yaml' names another file, which a check of this text alone does not read",
    ]);
  });

  it('given an empty include list, then it is refused with the reason the schema gives', () => {
    expect(problems(checkContractFile(contract(['a']).replace('version: 1\n', 'version: 1\ninclude: []\n'), 'tools.yaml'))).toEqual([
      "tools.yaml:2:10 include: names no file; remove 'include:' or list contract files",
    ]);
  });
});
