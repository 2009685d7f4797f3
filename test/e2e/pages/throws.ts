// Page module that throws: the harness must surface the page's error message.
export default async function run(message: string): Promise<never> {
  throw new Error(`page module failed on purpose: ${message}`);
}
