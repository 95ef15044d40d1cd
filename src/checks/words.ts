/** A set of allowed values as a reader writes it: [200, 404]. Shared by the run's matchers and a reproduction's. */
export const oneOf = (values: readonly unknown[]) => `[${values.map((value) => JSON.stringify(value)).join(', ')}]`;
