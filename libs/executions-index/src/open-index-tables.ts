import { join } from 'node:path';
import type { IndexTables } from './index-tables';
import { PostgresIndexTables } from './postgres-index-tables';
import { SQLITE_INDEX_FILE, SqliteIndexTables } from './sqlite-index-tables';

/** Where the index is kept: beside the embedded store's file, or in the PostgreSQL store's database. */
export type IndexLocation =
  | { readonly driver: 'sqlite'; readonly dataDir: string }
  /** `location` names the server without its password, for messages. */
  | { readonly driver: 'postgres'; readonly url: string; readonly location: string; readonly schema?: string };

/** Opens (creating when missing) the index's tables for the configured store. */
export async function openIndexTables(where: IndexLocation): Promise<IndexTables> {
  switch (where.driver) {
    case 'sqlite':
      return new SqliteIndexTables({ file: join(where.dataDir, SQLITE_INDEX_FILE) });
    case 'postgres':
      return PostgresIndexTables.open({ url: where.url, location: where.location, ...(where.schema === undefined ? {} : { schema: where.schema }) });
    default: {
      const unknown: never = where;
      return unknown;
    }
  }
}
