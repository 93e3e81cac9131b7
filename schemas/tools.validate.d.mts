import type { ValidateFunction } from 'ajv';

export declare const validate: ValidateFunction;
export default validate;
