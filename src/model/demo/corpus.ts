// The demo model's SFT corpus: every workflow (src/workflows) run on the demo task's train split with the
// scripted teacher (teacher.ts) playing every role; each turn becomes one row. Deterministic in its options.
import { hash32 } from '../../tasks/data/split.ts';
import { loadTasks } from '../../tasks/source.ts';
import { WORKFLOWS } from '../../workflows/index.ts';
import type { ChatMessage } from '../tokenizer.ts';
import { DemoTeacher, type TeacherOptions } from './teacher.ts';

export interface CorpusRow {
  workflow: string;
  role: string;
  slot: string;
  messages: ChatMessage[];
  completion: string;
}

export interface CorpusOptions {
  /** Task seed and teacher seeds (default 0). */
  seed?: number;
  /** Episodes per (train task, workflow) (default 2). */
  episodes?: number;
  teacher?: TeacherOptions;
}

/** The teacher's defaults for the committed demo model. */
export const DEMO_TEACHER: TeacherOptions = { careful: 0.3, refineCareful: 0.5, guessRight: 0.15 };

export async function buildDemoCorpus(opts: CorpusOptions = {}): Promise<CorpusRow[]> {
  const seed = opts.seed ?? 0;
  const tasks = await loadTasks({ kind: 'math', builtin: 'demo', seed });
  const rows: CorpusRow[] = [];
  for (const task of tasks.train) {
    for (const wf of WORKFLOWS) {
      for (let e = 0; e < (opts.episodes ?? 2); e++) {
        const teacher = new DemoTeacher(task, hash32(`${seed}/${task.id}/${wf.name}/${e}`), opts.teacher ?? DEMO_TEACHER);
        await wf.run(task, teacher);
        for (const t of teacher.turns) rows.push({ workflow: wf.name, role: t.request.role, slot: t.request.slot, messages: t.request.messages, completion: t.text });
      }
    }
  }
  return rows;
}

/** A row as the model sees it: ChatML (the demo tokenizer's template) with the reply and <|im_end|>. */
export function chatmlText(r: Pick<CorpusRow, 'messages' | 'completion'>): string {
  return r.messages.map((m) => `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`).join('') + `<|im_start|>assistant\n${r.completion}<|im_end|>\n`;
}
