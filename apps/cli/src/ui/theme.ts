/** A colour name, or none when the user asked for no colour (https://no-color.org). */
export const tint = (color: string): string | undefined => (process.env.NO_COLOR ? undefined : color);
