/** The code with its non-ASCII characters replaced when they were all in comments; else as it was, `kept` saying why. */
export declare function asciiOutput(code: string): Promise<{ readonly code: string; readonly kept?: string }>;
