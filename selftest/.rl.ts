import { variants } from './variants';
console.log(variants.filter((v) => v.breaks === 'rate-limit' || (!v.breaks && (v.rules?.includes('rate-limit') ?? true))).map((v) => v.name).join(','));
