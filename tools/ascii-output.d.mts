/** The code with its non-ASCII characters replaced when they were all in comments; else as it was, `kept` saying why. */
export declare function asciiOutput(code: string): Promise<{ readonly code: string; readonly kept?: string }>;
/** Rewrites each script in place; one kept as it was is named on standard error by its path from `from`. */
export declare function asciiFiles(files: readonly string[], from: string): Promise<void>;
