import { describe, expect, it } from 'vitest';
import { projectionProblems } from './load-projection';
import type { ProjectionRow } from './projection';
import { progressReporter, renderProgress } from './progress';
import { columnsOf, formatRows, rowsFormatOf, toCsv, UnsupportedRowsFormatError } from './write-rows';

describe('rows as CSV and JSON', () => {
  it('quotes per RFC 4180: header row, CRLF, quotes doubled, commas and line breaks quoted, null empty', () => {
    const rows: ProjectionRow[] = [
      { id: 'a', note: 'plain', count: 1, ok: true },
      { id: 'b', note: 'has, comma', count: null, ok: false },
      { id: 'c', note: 'say "hi"\nthen go', extra: 'late column' },
    ];
    expect(toCsv(rows)).toBe(
      'id,note,count,ok,extra\r\n' +
        'a,plain,1,true,\r\n' +
        'b,"has, comma",,false,\r\n' +
        'c,"say ""hi""\nthen go",,,late column\r\n',
    );
    expect(columnsOf(rows)).toEqual(['id', 'note', 'count', 'ok', 'extra']);
    expect(toCsv([])).toBe('');
  });

  it('writes JSON as an array and picks the format from the file name', () => {
    expect(JSON.parse(formatRows([{ a: 1 }], 'json'))).toEqual([{ a: 1 }]);
    expect(rowsFormatOf('out/report.CSV')).toBe('csv');
    expect(rowsFormatOf('report.json')).toBe('json');
    expect(() => rowsFormatOf('report.xlsx')).toThrow(UnsupportedRowsFormatError);
  });
});

describe('progress', () => {
  it('renders a bar with percent and counts, or a count when the total is unknown', () => {
    expect(renderProgress(0, 10, 10)).toBe('[..........]   0% 0/10');
    expect(renderProgress(5, 10, 10)).toBe('[#####.....]  50% 5/10');
    expect(renderProgress(12, 10, 10)).toBe('[##########] 100% 10/10');
    expect(renderProgress(42, undefined)).toBe('42 positions read');
  });

  it('redraws in place on a terminal, and only every few seconds elsewhere', () => {
    let clock = 0;
    const written: string[] = [];
    const log = progressReporter({ isTTY: false, write: (text: string) => written.push(text) }, { width: 4, intervalMs: 5000, now: () => clock });
    log.update(1, 4);
    clock = 1000;
    log.update(2, 4);
    clock = 6000;
    log.update(3, 4);
    log.finish();
    expect(written).toEqual(['[#...]  25% 1/4\n', '[###.]  75% 3/4\n', '[###.]  75% 3/4\n']);

    const tty: string[] = [];
    const bar = progressReporter({ isTTY: true, write: (text: string) => tty.push(text) }, { width: 4, now: () => clock });
    bar.update(4, 4);
    bar.finish();
    expect(tty).toEqual(['\r[####] 100% 4/4', '\r[####] 100% 4/4\n']);
  });
});

describe('projection module shape', () => {
  it('names everything a module export lacks to be a projection', () => {
    expect(projectionProblems({ name: 'x', description: 'y', initialState: () => 0, evolve: () => 0, rows: () => [] })).toEqual([]);
    expect(projectionProblems({ name: '', evolve: 1, filter: { eventTypes: [1] } })).toEqual([
      'name must be a non-empty string',
      'description must be a non-empty string',
      'initialState must be a function',
      'evolve must be a function',
      'rows must be a function',
      'filter.eventTypes must be a list of strings',
    ]);
    expect(projectionProblems(null)).toEqual(['expected an object, got null']);
    const shaped = { name: 'x', description: 'y', initialState: () => 0, evolve: () => 0, rows: () => [] };
    expect(projectionProblems({ ...shaped, key: ['actor', 'run'] })).toEqual([]);
    for (const key of ['actor', [], [1], ['']]) expect(projectionProblems({ ...shaped, key })).toEqual(['key must be a non-empty list of column names']);
  });
});
