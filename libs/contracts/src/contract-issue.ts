/**
 * One problem found in a contract file, with everything needed to find and fix it.
 * `path` is the YAML path (`tools[2].http.method`); it is empty for problems of the whole file
 * (empty file, YAML syntax).
 */
export interface ContractIssue {
  readonly file: string;
  readonly path: string;
  /** 1-based. */
  readonly line: number;
  /** 1-based. */
  readonly column: number;
  readonly reason: string;
}

/** `file:line:column path: reason`, or `file:line:column: reason` for a whole-file problem. */
export function formatIssue(issue: ContractIssue): string {
  const where = `${issue.file}:${issue.line}:${issue.column}`;
  return issue.path === '' ? `${where}: ${issue.reason}` : `${where} ${issue.path}: ${issue.reason}`;
}

/** Every problem of one contract file, found in one pass; nothing of the file is usable until all are fixed. */
export class ContractValidationError extends Error {
  readonly code = 'contract_invalid' as const;

  constructor(
    readonly file: string,
    readonly issues: readonly ContractIssue[],
  ) {
    super(
      `${file}: ${issues.length} problem${issues.length === 1 ? '' : 's'} in the tool contract file\n` +
        issues.map(formatIssue).join('\n'),
    );
    this.name = 'ContractValidationError';
  }

  /** One `file:line:column path: reason` line per issue, in file order. */
  format(): string {
    return this.issues.map(formatIssue).join('\n');
  }
}
