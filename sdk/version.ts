// The version of the package (packages/gradebox/package.json and the checkout's package.json say
// the same; test/cli-files.test.ts holds them together): `gradebox --version` prints it.
export const VERSION = "0.1.0";
