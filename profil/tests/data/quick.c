/* Exits at once: a run with no samples of the program. */
int main(void)
{
    return 0;
}
