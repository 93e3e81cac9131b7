import { describe, expect, it } from 'vitest';
import { EMPTY_TABLE, planTableWrite, ProjectionColumnTypeError, ProjectionKeyError, writtenTable } from './sql-table-plan';

describe('planTableWrite', () => {
  it('given a first batch, then the columns take the types of their cells, in the order they first appear; a column of nulls waits for a value', () => {
    const plan = planTableWrite('t', [{ id: 'a', n: 1, ok: true, note: null }, { id: 'b', n: 2.5, extra: 'x', note: null }], EMPTY_TABLE, ['id']);
    expect(plan.addColumns).toEqual([
      { name: 'id', type: 'text' },
      { name: 'n', type: 'numeric' },
      { name: 'ok', type: 'boolean' },
      { name: 'extra', type: 'text' },
    ]);
    expect(plan.upserts).toHaveLength(2);
    expect(plan.deletes).toEqual([]);

    const later = planTableWrite('t', [{ id: 'a', n: 1, ok: true, note: 'now text' }], plan.next, ['id']);
    expect(later.addColumns).toEqual([{ name: 'note', type: 'text' }]);
    expect(later.columns.map((column) => column.name)).toEqual(['id', 'n', 'ok', 'extra', 'note']);
  });

  it('given a key, then only rows new or changed are upserted and rows gone are deleted; a missing cell and a null are alike', () => {
    const before = writtenTable([{ id: 'a', n: 1 }, { id: 'b', n: 2 }, { id: 'c', n: 3, note: null }], [{ name: 'id', type: 'text' }, { name: 'n', type: 'numeric' }], ['id'], 't');
    const plan = planTableWrite('t', [{ n: 1, id: 'a' }, { id: 'c', n: 3 }, { id: 'b', n: 5 }, { id: 'd', n: 4 }], before, ['id']);
    expect(plan.upserts).toEqual([{ id: 'b', n: 5 }, { id: 'd', n: 4 }]);
    expect(plan.deletes).toEqual([]);
    const after = planTableWrite('t', [{ id: 'd', n: 4 }], plan.next, ['id']);
    expect(after.upserts).toEqual([]);
    expect(after.deletes).toEqual([['a'], ['c'], ['b']]);
  });

  it('given no key, then the rows replace the table when any of them changed, and nothing is written when none did', () => {
    const first = planTableWrite('t', [{ a: 1 }, { a: 2 }], EMPTY_TABLE, undefined);
    expect(first.replace).toEqual([{ a: 1 }, { a: 2 }]);
    expect(planTableWrite('t', [{ a: 1 }, { a: 2 }], first.next, undefined).replace).toBeUndefined();
    expect(planTableWrite('t', [{ a: 1 }, { a: 3 }], first.next, undefined).replace).toEqual([{ a: 1 }, { a: 3 }]);
  });

  it('given a cell whose type differs from its column, in this batch or an earlier one, then it is an error naming table, column, both types and the row', () => {
    const first = planTableWrite('runs', [{ id: 'a', n: 1 }], EMPTY_TABLE, ['id']);
    expect(() => planTableWrite('runs', [{ id: 'a', n: 1 }, { id: 'b', n: '2' }], first.next, ['id'])).toThrow(
      new ProjectionColumnTypeError('runs', 'n', 'it holds numeric, but row 2 of 2 has the text "2"; a column keeps one type: make rows() give it one (e.g. String(value)), or rebuild into a new table'),
    );
    expect(() => planTableWrite('runs', [{ id: 'a', ok: true }, { id: 'b', ok: 1 }], EMPTY_TABLE, ['id'])).toThrow(/column "ok": it holds boolean, but row 2 of 2 has the numeric 1/);
    expect(() => planTableWrite('runs', [{ id: 'a', n: Number.NaN }], EMPTY_TABLE, ['id'])).toThrow(/row 1 holds NaN, which no SQL numeric column holds/);
    expect(() => planTableWrite('runs', [{ id: 'a', n: { deep: 1 } as never }], EMPTY_TABLE, ['id'])).toThrow(/row 1 holds a object: a cell is text, a number, a boolean or null/);
  });

  it('given rows a key cannot identify, then it is an error: a key cell without a value, or two rows with one key', () => {
    expect(() => planTableWrite('t', [{ id: null, n: 1 }], EMPTY_TABLE, ['id'])).toThrow(ProjectionKeyError);
    expect(() => planTableWrite('t', [{ actor: 'a', run: 'r', n: 1 }, { actor: 'a', run: 'r', n: 2 }], EMPTY_TABLE, ['actor', 'run'])).toThrow(
      'table t: two rows have the key actor="a", run="r": a key names one row',
    );
  });
});
