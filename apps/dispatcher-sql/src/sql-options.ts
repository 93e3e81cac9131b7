/** The SQL channel's options (`channels.sql` in oncegate.yaml), with the defaults of their schema filled in. */
export interface SqlOptions {
  /** The rows of a result kept in the answer and in the idempotency record; the rest are counted (`rowsCut`). */
  readonly max_rows: number;
}

/** The most rows kept when `max_rows` is not set: an answer stays readable and its record small. */
export const DEFAULT_MAX_ROWS = 1000;

/**
 * The JSON Schema of the SQL channel's options, as the channel publishes it (`oncegate channels schema`): what applies
 * to every SQL tool. A process hosting the channel checks `channels.sql` against it before the channel opens.
 */
export const SQL_OPTIONS_SCHEMA = {
  title: 'The SQL channel: what applies to every SQL tool',
  type: 'object',
  additionalProperties: false,
  properties: {
    max_rows: {
      type: 'integer',
      minimum: 1,
      maximum: 100_000,
      default: DEFAULT_MAX_ROWS,
      description: 'The rows of a result kept in the answer and in the idempotency record; a longer result is cut and says how many rows it had (rowsCut).',
    },
  },
};

/** The options as the kit hands them to `open`: checked against SQL_OPTIONS_SCHEMA, defaults filled in. */
export function sqlOptions(checked: Readonly<Record<string, unknown>>): SqlOptions {
  return { max_rows: (checked['max_rows'] as number | undefined) ?? DEFAULT_MAX_ROWS };
}
