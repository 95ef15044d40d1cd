import { createReferenceServer } from '../reference/server';
import { variants } from './variants';
const v = variants.find((x) => x.name === process.env.V)!;
createReferenceServer({ port: Number(process.env.PORT ?? 18700), ...v.options }).then((s) => console.log('serving', v.name, s.url));
