/**
 * Value shapes shared by Oncegate's YAML files (the tool contract file and `oncegate.yaml`), as they are written.
 * tools/config-schemas generates the published JSON Schemas from these types and the file types that use them: the
 * JSDoc is the schema (descriptions, `@pattern`, `@minimum`…), and `@patternErrorMessage` / `@errorMessage` are the
 * reasons an editor shows and the loaders print (schema-issues.ts).
 */

/**
 * A duration with a unit as text: `500ms`, `90s`, `5m`, `2h`, `1d`, combinations such as `1h30m`, or `0`.
 * @pattern ^(0|(\d+(ms|s|m|h|d))+)$
 * @patternErrorMessage Not a duration; write 500ms, 90s, 5m, 2h, 1d, 1h30m, or 0
 */
export type DurationText = string;

/**
 * A duration: `500ms`, `90s`, `5m`, `2h`, `1d`, combinations such as `1h30m`, or `0`. A bare number other than 0 is
 * refused: it could mean seconds or milliseconds.
 * @errorMessage Not a duration; write 500ms, 90s, 5m, 2h, 1d, 1h30m, or 0
 */
export type Duration = DurationText | 0;

/**
 * Text that is not empty or blank.
 * @pattern \S
 * @patternErrorMessage Must not be empty
 */
export type NonEmptyString = string;
